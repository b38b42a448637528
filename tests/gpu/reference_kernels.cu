// The reference kernels of reference_kernels.h: deliberately naive, one
// thread per output element, float64 throughout.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>

#include "reference_kernels.h"

namespace ptb::test::reference {
namespace {

constexpr int kThreads = 128;

__device__ double load(const View& v, int64_t offset) {
  switch (v.dtype) {
    case 5: return static_cast<double>(__half2float(static_cast<const __half*>(v.data)[offset]));
    case 7: return static_cast<const double*>(v.data)[offset];
    case 15: return static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(v.data)[offset]));
    default: return static_cast<double>(static_cast<const float*>(v.data)[offset]);
  }
}

__device__ double activate(double x, Activation act) {
  if (act == Activation::Relu) return x > 0 ? x : 0;
  if (act == Activation::GeluTanh) {
    const double inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1 + tanh(inner));
  }
  return x;
}

__global__ void gemm_kernel(View a, View b, View c, bool has_c, double alpha, double beta, Activation act,
                            int64_t batch, int64_t m, int64_t n, int64_t k, double* value, double* magnitude) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= batch * m * n) return;
  const int64_t j = index % n, i = (index / n) % m, p = index / (m * n);
  double sum = 0, size = 0;
  for (int64_t r = 0; r < k; ++r) {
    const double x = load(a, p * a.strides[0] + i * a.strides[1] + r * a.strides[2]);
    const double y = load(b, p * b.strides[0] + r * b.strides[1] + j * b.strides[2]);
    sum += x * y;
    size += fabs(x * y);
  }
  double result = alpha * sum;
  size *= fabs(alpha);
  if (has_c && beta != 0) {
    const double added = load(c, p * c.strides[0] + i * c.strides[1] + j * c.strides[2]);
    result += beta * added;
    size += fabs(beta * added);
  }
  value[index] = activate(result, act);
  magnitude[index] = size;
}

__global__ void convolution_kernel(View x, View w, View bias, bool has_bias, ConvGeometry g, int64_t total,
                                   double* value, double* magnitude) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= total) return;
  // The output position, last dimension fastest.
  int64_t out[kMaxDims] = {};
  int64_t rest = index;
  for (int d = 2 + g.spatial; d-- > 0;) {
    out[d] = rest % g.out_sizes[d];
    rest /= g.out_sizes[d];
  }
  const int64_t batch = out[0], oc = out[1];
  const int64_t c_in = x.sizes[1];
  const int64_t in_per_group = c_in / g.groups;
  const int64_t out_per_group = g.out_sizes[1] / g.groups;
  const int64_t group = oc / out_per_group;
  int64_t taps = 1;
  for (int d = 0; d < g.spatial; ++d) taps *= w.sizes[2 + d];
  double sum = 0, size = 0;
  for (int64_t ci = 0; ci < in_per_group; ++ci) {
    const int64_t ic = group * in_per_group + ci;
    for (int64_t t = 0; t < taps; ++t) {
      int64_t tap[3] = {};
      int64_t left = t;
      for (int d = g.spatial; d-- > 0;) {
        tap[d] = left % w.sizes[2 + d];
        left /= w.sizes[2 + d];
      }
      int64_t x_offset = batch * x.strides[0] + ic * x.strides[1];
      bool inside = true;
      for (int d = 0; d < g.spatial && inside; ++d) {
        int64_t position;
        if (!g.transposed) {
          position = out[2 + d] * g.stride[d] - g.padding[d] + tap[d] * g.dilation[d];
        } else {
          const int64_t scaled = out[2 + d] + g.padding[d] - tap[d] * g.dilation[d];
          if (scaled < 0 || scaled % g.stride[d] != 0) {
            inside = false;
            break;
          }
          position = scaled / g.stride[d];
        }
        if (position < 0 || position >= x.sizes[2 + d]) inside = false;
        x_offset += position * x.strides[2 + d];
      }
      if (!inside) continue;
      int64_t w_offset = g.transposed ? ic * w.strides[0] + (oc % out_per_group) * w.strides[1]
                                      : oc * w.strides[0] + ci * w.strides[1];
      for (int d = 0; d < g.spatial; ++d) w_offset += tap[d] * w.strides[2 + d];
      const double product = load(x, x_offset) * load(w, w_offset);
      sum += product;
      size += fabs(product);
    }
  }
  if (has_bias) {
    const double added = load(bias, oc * bias.strides[0]);
    sum += added;
    size += fabs(added);
  }
  value[index] = sum;
  magnitude[index] = size;
}

__device__ bool hidden(bool causal, int64_t i, int64_t j) { return causal && j > i; }

__device__ double score(const View& q, const View& k, const View& bias, bool has_bias, double scale, int64_t b,
                        int64_t h, int64_t i, int64_t j) {
  double dot = 0;
  for (int64_t e = 0; e < q.sizes[3]; ++e) {
    dot += load(q, b * q.strides[0] + h * q.strides[1] + i * q.strides[2] + e * q.strides[3]) *
           load(k, b * k.strides[0] + h * k.strides[1] + j * k.strides[2] + e * k.strides[3]);
  }
  double s = scale * dot;
  if (has_bias) s += load(bias, b * bias.strides[0] + h * bias.strides[1] + i * bias.strides[2] + j * bias.strides[3]);
  return s;
}

__global__ void attention_kernel(View q, View k, View v, View bias, bool has_bias, double scale, bool causal,
                                 double* value, double* lse) {
  const int64_t B = q.sizes[0], H = q.sizes[1], L = q.sizes[2], S = k.sizes[2], Ev = v.sizes[3];
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= B * H * L * Ev) return;
  const int64_t e = index % Ev, i = (index / Ev) % L, h = (index / (Ev * L)) % H, b = index / (Ev * L * H);
  double top = -INFINITY;
  for (int64_t j = 0; j < S; ++j)
    if (!hidden(causal, i, j)) top = fmax(top, score(q, k, bias, has_bias, scale, b, h, i, j));
  double total = 0, weighted = 0;
  if (top != -INFINITY) {
    for (int64_t j = 0; j < S; ++j) {
      if (hidden(causal, i, j)) continue;
      const double p = exp(score(q, k, bias, has_bias, scale, b, h, i, j) - top);
      total += p;
      weighted += p * load(v, b * v.strides[0] + h * v.strides[1] + j * v.strides[2] + e * v.strides[3]);
    }
  }
  value[index] = total > 0 ? weighted / total : 0;
  if (e == 0) lse[(b * H + h) * L + i] = total > 0 ? top + log(total) : -INFINITY;
}

std::string finish(cudaError_t launched) {
  if (launched != cudaSuccess) return cudaGetErrorString(launched);
  const cudaError_t done = cudaDeviceSynchronize();
  return done == cudaSuccess ? std::string() : std::string(cudaGetErrorString(done));
}

unsigned blocks(int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

}  // namespace

std::string gemm(const View& a, const View& b, const View* c, double alpha, double beta, Activation act,
                 double* value, double* magnitude) {
  const int64_t batch = a.sizes[0], m = a.sizes[1], k = a.sizes[2], n = b.sizes[2];
  const int64_t count = batch * m * n;
  if (count == 0) return "";
  gemm_kernel<<<blocks(count), kThreads>>>(a, b, c ? *c : View{}, c != nullptr, alpha, beta, act, batch, m, n, k,
                                           value, magnitude);
  return finish(cudaGetLastError());
}

std::string convolution(const View& x, const View& w, const View* bias, const ConvGeometry& geometry,
                        double* value, double* magnitude) {
  int64_t count = 1;
  for (int d = 0; d < 2 + geometry.spatial; ++d) count *= geometry.out_sizes[d];
  if (count == 0) return "";
  convolution_kernel<<<blocks(count), kThreads>>>(x, w, bias ? *bias : View{}, bias != nullptr, geometry, count,
                                                  value, magnitude);
  return finish(cudaGetLastError());
}

std::string attention(const View& q, const View& k, const View& v, const View* bias, double scale, bool causal,
                      double* value, double* lse) {
  const int64_t count = q.sizes[0] * q.sizes[1] * q.sizes[2] * v.sizes[3];
  if (count == 0) return "";
  attention_kernel<<<blocks(count), kThreads>>>(q, k, v, bias ? *bias : View{}, bias != nullptr, scale, causal, value,
                                                lse);
  return finish(cudaGetLastError());
}

void* device_alloc(size_t bytes) {
  void* data = nullptr;
  if (cudaMalloc(&data, bytes == 0 ? 1 : bytes) != cudaSuccess) return nullptr;
  return data;
}

void device_free(void* data) { cudaFree(data); }

std::string to_device(void* dst, const void* src, size_t bytes) {
  const cudaError_t code = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return code == cudaSuccess ? std::string() : std::string(cudaGetErrorString(code));
}

std::string to_host(void* dst, const void* src, size_t bytes) {
  const cudaError_t code = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  return code == cudaSuccess ? std::string() : std::string(cudaGetErrorString(code));
}

std::string synchronize() {
  const cudaError_t code = cudaDeviceSynchronize();
  return code == cudaSuccess ? std::string() : std::string(cudaGetErrorString(code));
}

}  // namespace ptb::test::reference
