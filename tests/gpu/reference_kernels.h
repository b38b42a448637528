// Reference results for the compute shims, computed on the GPU by the
// plainest kernels that can be written: one thread per output element, a
// loop over the reduction in float64, every operand read through its sizes
// and strides as given. They share nothing with the shims (no cuBLAS, no
// cuDNN, no tiling), so a wrong layout rule in a shim cannot also be in the
// reference. Each returns "" or the CUDA error's text, and waits for its
// work to finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ptb::test::reference {

inline constexpr int kMaxDims = 5;

// A strided view on the GPU: data points at the view's first element; sizes
// and strides in elements; dtype a c10 number (float32, float64, float16 or
// bfloat16).
struct View {
  const void* data = nullptr;
  int32_t dtype = 6;
  int32_t dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

enum class Activation : int32_t { None = 0, Relu = 1, GeluTanh = 2 };

// value[b, i, j] = act(alpha * sum_k a[b, i, k] b[b, k, j] + beta * c[b, i, j])
// over 3-d views (a 2-d product is a batch of 1); c may be null (then beta
// is not read), and is read with its own strides (0 where it is broadcast).
// magnitude[b, i, j] = |alpha| sum_k |a b| + |beta c|, the scale of the
// rounding a float32 product may accumulate. Both outputs: float64,
// [batch, m, n] contiguous, on the GPU.
std::string gemm(const View& a, const View& b, const View* c, double alpha, double beta, Activation act,
                 double* value, double* magnitude);

// ATen's convolution over N-d views [n, c, spatial...] (1 to 3 spatial
// dimensions): weight [c_out, c_in/groups, k...], or for a transposed
// convolution [c_in, c_out/groups, k...]; bias [c_out] or null. `out_sizes`
// is the output's [n, c_out, spatial...]. value and magnitude as gemm's,
// contiguous over out_sizes.
struct ConvGeometry {
  int32_t spatial = 2;
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  bool transposed = false;
  int64_t groups = 1;
  int64_t out_sizes[kMaxDims] = {};
};
std::string convolution(const View& x, const View& w, const View* bias, const ConvGeometry& geometry,
                        double* value, double* magnitude);

// Scaled dot-product attention over [b, h, l, e] views: out[b, h, i, :] =
// sum_j p_ij v[b, h, j, :] with p = softmax_j(scale * q_i . k_j + bias_ij),
// keys j > i hidden when causal (top-left aligned); bias [b, h, l, s] with
// its strides (0 where broadcast) or null. value: float64 [b, h, l, ev]
// contiguous; lse: float64 [b, h, l], the log-sum-exp of each row's scaled,
// biased scores (-inf for a row with every key hidden).
std::string attention(const View& q, const View& k, const View& v, const View* bias, double scale, bool causal,
                      double* value, double* lse);

// GPU memory for the references and the tests' operands.
void* device_alloc(size_t bytes);
void device_free(void* data);
std::string to_device(void* dst, const void* src, size_t bytes);
std::string to_host(void* dst, const void* src, size_t bytes);
// Waits for all work on the device (the shims' stream included).
std::string synchronize();

}  // namespace ptb::test::reference
