// The built-in runtime's own GPU kernels (the .cu files beside this), as
// plain functions the C++ shims call. Each launches in order on `stream` and
// returns the launch's error; none synchronizes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ptb::builtin::kernels {

inline constexpr int kMaxDims = 10;

// A strided view for a kernel: sizes and strides in elements, data pointing
// at the view's first element.
struct View {
  void* data = nullptr;
  int32_t dtype = 6;
  int32_t dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// Sizes and strides (in elements) a kernel walks in row-major order.
struct Layout {
  int32_t dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// A view's sizes and strides, for a kernel's argument.
inline Layout layout_of(const View& view) {
  Layout layout{};
  layout.dims = view.dims;
  for (int32_t k = 0; k < view.dims; ++k) {
    layout.sizes[k] = view.sizes[k];
    layout.strides[k] = view.strides[k];
  }
  return layout;
}

// How a scatter or an accumulating put combines a value with its target.
enum class Reduce : int32_t { None, Sum, Prod, Mean, Max, Min };

// Whether element_access.cuh's load_value/to_bits take `dtype` (the real
// dtypes of at most 8 bytes whose values a double holds).
bool accessible_dtype(int32_t dtype);

// Every element of `src` into `dst` (same sizes), converted between dtypes
// as ATen's copy_ converts them (floating to integer truncates toward zero,
// anything to bool tests for nonzero). Both on the GPU.
cudaError_t strided_copy(const View& dst, const View& src, int64_t numel, cudaStream_t stream);

// Keeps `stream` busy for about `nanoseconds`: work queued behind it while
// it waits then runs back to back, so timing that work measures the GPU.
cudaError_t hold(cudaStream_t stream, uint32_t nanoseconds);

// Whether strided_copy handles `dtype` (the real ones ATen copies).
bool copyable_dtype(int32_t dtype);

// dst += src, element by element (src's strides may be 0: a broadcast);
// one floating dtype.
cudaError_t add(const View& dst, const View& src, int64_t numel, cudaStream_t stream);

// The rows of attention scores softmax turns into probabilities: scores
// [batch*heads, lq, lk] float32 (row-major), the scale applied first, then
// the bias (dtype bias_dtype, strides over b, h, i, j; 0 to broadcast),
// then the causal mask (key j > query i hidden, top-left aligned).
struct AttentionRows {
  int64_t batch_heads = 0, heads = 1, lq = 0, lk = 0;
  int64_t first = 0;  // the first (batch*heads) row of these scores, for the bias and lse
  float scale = 1;
  bool causal = false;
  const void* bias = nullptr;
  int32_t bias_dtype = 6;
  int64_t bias_strides[4] = {};
  float* lse = nullptr;  // per row, when wanted: strides over b, h, i
  int64_t lse_strides[3] = {};
};

// probabilities (dtype probability_dtype, [batch*heads, lq, lk]) =
// softmax over each row; lse[row] = its log-sum-exp.
cudaError_t attention_softmax(const float* scores, void* probabilities, int32_t probability_dtype,
                              const AttentionRows& rows, cudaStream_t stream);

enum class Act { Relu, GeluTanh };

// view = act(view), in place; floating dtypes.
cudaError_t activate(const View& view, int64_t numel, Act act, cudaStream_t stream);

// view = view * factor, in place (factor 0 writes zeros, NaN or not).
cudaError_t scale(const View& view, int64_t numel, double factor, cudaStream_t stream);

}  // namespace ptb::builtin::kernels

namespace ptb::builtin {
struct Im2col;
}

namespace ptb::builtin::kernels {

// columns ([geometry.rows(), geometry.columns()] float32, row-major) = the
// patches of the batch-1 float32 input x (im2col.h).
cudaError_t im2col(const Im2col& geometry, const float* x, float* columns, cudaStream_t stream);

}  // namespace ptb::builtin::kernels
