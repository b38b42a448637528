// In-place element-wise kernels the shims finish with: an activation after
// a GEMM that cuBLASLt could not fuse, a scale by a GEMM's beta.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/element_access.cuh"
#include "kernels/kernels.h"
#include "ptbundle/base/dtype.h"

namespace ptb::builtin::kernels {
namespace {


__device__ float read(const void* base, int64_t at, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Half: return __half2float(static_cast<const __half*>(base)[at]);
    case ScalarType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[at]);
    default: return static_cast<const float*>(base)[at];
  }
}

__device__ void write(void* base, int64_t at, int32_t dtype, float value) {
  switch (dtype) {
    case ScalarType::Half: static_cast<__half*>(base)[at] = __float2half_rn(value); break;
    case ScalarType::BFloat16: static_cast<__nv_bfloat16*>(base)[at] = __float2bfloat16_rn(value); break;
    default: static_cast<float*>(base)[at] = value; break;
  }
}

__device__ double apply(double x, Act act) {
  if (act == Act::Relu) return x > 0 ? x : 0;
  // GELU, tanh approximation (as ATen's "tanh" and cuBLASLt's epilogue).
  const double inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + tanh(inner));
}

__global__ void activate_kernel(void* data, int32_t dtype, Layout layout, int64_t numel, Act act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = offset_of(i, layout);
    if (dtype == ScalarType::Double) {
      static_cast<double*>(data)[at] = apply(static_cast<double*>(data)[at], act);
    } else {
      write(data, at, dtype, static_cast<float>(apply(read(data, at, dtype), act)));
    }
  }
}

__global__ void scale_kernel(void* data, int32_t dtype, Layout layout, int64_t numel, double factor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = offset_of(i, layout);
    if (dtype == ScalarType::Double) {
      double* p = static_cast<double*>(data) + at;
      *p = factor == 0 ? 0.0 : *p * factor;
    } else {
      write(data, at, dtype, factor == 0 ? 0.0f : static_cast<float>(read(data, at, dtype) * factor));
    }
  }
}

__global__ void add_kernel(void* dst, Layout dst_layout, const void* src, Layout src_layout, int32_t dtype,
                           int64_t numel) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = offset_of(i, dst_layout), s = offset_of(i, src_layout);
    if (dtype == ScalarType::Double) {
      static_cast<double*>(dst)[d] += static_cast<const double*>(src)[s];
    } else {
      write(dst, d, dtype, read(dst, d, dtype) + read(src, s, dtype));
    }
  }
}

unsigned blocks(int64_t numel) { return static_cast<unsigned>(std::min<int64_t>((numel + 255) / 256, 65535)); }

}  // namespace

cudaError_t activate(const View& view, int64_t numel, Act act, cudaStream_t stream) {
  if (numel == 0) return cudaSuccess;
  activate_kernel<<<blocks(numel), 256, 0, stream>>>(view.data, view.dtype, layout_of(view), numel, act);
  return cudaGetLastError();
}

cudaError_t add(const View& dst, const View& src, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return cudaSuccess;
  add_kernel<<<blocks(numel), 256, 0, stream>>>(dst.data, layout_of(dst), src.data, layout_of(src), dst.dtype, numel);
  return cudaGetLastError();
}

cudaError_t scale(const View& view, int64_t numel, double factor, cudaStream_t stream) {
  if (numel == 0) return cudaSuccess;
  scale_kernel<<<blocks(numel), 256, 0, stream>>>(view.data, view.dtype, layout_of(view), numel, factor);
  return cudaGetLastError();
}

bool accessible_dtype(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Float: case ScalarType::Double: case ScalarType::Half: case ScalarType::BFloat16:
    case ScalarType::Byte: case ScalarType::Char: case ScalarType::Short: case ScalarType::Int:
    case ScalarType::Long: case ScalarType::Bool:
      return true;
    default:
      return false;
  }
}

}  // namespace ptb::builtin::kernels
