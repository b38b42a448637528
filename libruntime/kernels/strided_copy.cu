// Element-wise copy between two strided views on the GPU, converting the
// dtype on the way: what aoti_torch_copy_, clone and the runtime's own
// copies between layouts need. Memory-bound; one thread per element, the
// index unravelled over the destination's sizes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/kernels.h"
#include "ptbundle/base/dtype.h"

namespace ptb::builtin::kernels {
namespace {


struct Shape {
  int32_t dims;
  int64_t sizes[kMaxDims];
  int64_t dst_strides[kMaxDims];
  int64_t src_strides[kMaxDims];
};

// Integers travel as int64 and floating values as double, so that an
// int64 copy keeps every bit and a float copy rounds once.
struct Value {
  bool floating;
  double real;
  int64_t integer;
};

__device__ Value load(const void* base, int64_t at, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Bool: return {false, 0, static_cast<const bool*>(base)[at] ? 1 : 0};
    case ScalarType::Byte: return {false, 0, static_cast<const uint8_t*>(base)[at]};
    case ScalarType::Char: return {false, 0, static_cast<const int8_t*>(base)[at]};
    case ScalarType::Short: return {false, 0, static_cast<const int16_t*>(base)[at]};
    case ScalarType::Int: return {false, 0, static_cast<const int32_t*>(base)[at]};
    case ScalarType::Long: return {false, 0, static_cast<const int64_t*>(base)[at]};
    case ScalarType::UInt16: return {false, 0, static_cast<const uint16_t*>(base)[at]};
    case ScalarType::UInt32: return {false, 0, static_cast<const uint32_t*>(base)[at]};
    case ScalarType::UInt64: return {false, 0, static_cast<int64_t>(static_cast<const uint64_t*>(base)[at])};
    case ScalarType::Half: return {true, __half2float(static_cast<const __half*>(base)[at]), 0};
    case ScalarType::BFloat16: return {true, __bfloat162float(static_cast<const __nv_bfloat16*>(base)[at]), 0};
    case ScalarType::Float: return {true, static_cast<const float*>(base)[at], 0};
    case ScalarType::Double: return {true, static_cast<const double*>(base)[at], 0};
    default: return {false, 0, 0};
  }
}

__device__ void store(void* base, int64_t at, int32_t dtype, Value v) {
  const double real = v.floating ? v.real : static_cast<double>(v.integer);
  // Truncation toward zero, as a C cast (and ATen) converts.
  const int64_t integer = v.floating ? static_cast<int64_t>(v.real) : v.integer;
  switch (dtype) {
    case ScalarType::Bool: static_cast<bool*>(base)[at] = v.floating ? v.real != 0 : v.integer != 0; break;
    case ScalarType::Byte: static_cast<uint8_t*>(base)[at] = static_cast<uint8_t>(integer); break;
    case ScalarType::Char: static_cast<int8_t*>(base)[at] = static_cast<int8_t>(integer); break;
    case ScalarType::Short: static_cast<int16_t*>(base)[at] = static_cast<int16_t>(integer); break;
    case ScalarType::Int: static_cast<int32_t*>(base)[at] = static_cast<int32_t>(integer); break;
    case ScalarType::Long: static_cast<int64_t*>(base)[at] = integer; break;
    case ScalarType::UInt16: static_cast<uint16_t*>(base)[at] = static_cast<uint16_t>(integer); break;
    case ScalarType::UInt32: static_cast<uint32_t*>(base)[at] = static_cast<uint32_t>(integer); break;
    case ScalarType::UInt64: static_cast<uint64_t*>(base)[at] = static_cast<uint64_t>(integer); break;
    case ScalarType::Half: static_cast<__half*>(base)[at] = __float2half_rn(static_cast<float>(real)); break;
    case ScalarType::BFloat16: static_cast<__nv_bfloat16*>(base)[at] = __float2bfloat16_rn(static_cast<float>(real)); break;
    case ScalarType::Float: static_cast<float*>(base)[at] = static_cast<float>(real); break;
    case ScalarType::Double: static_cast<double*>(base)[at] = real; break;
    default: break;
  }
}

template <class T>
__device__ void move_bits(void* dst, int64_t d, const void* src, int64_t s) {
  static_cast<T*>(dst)[d] = static_cast<const T*>(src)[s];
}

__global__ void copy_kernel(void* dst, int32_t dst_dtype, const void* src, int32_t src_dtype, Shape shape,
                            int64_t numel, int32_t same_bytes) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, d = 0, s = 0;
    for (int32_t k = shape.dims - 1; k >= 0; --k) {
      const int64_t index = rest % shape.sizes[k];
      rest /= shape.sizes[k];
      d += index * shape.dst_strides[k];
      s += index * shape.src_strides[k];
    }
    switch (same_bytes) {  // one dtype: the bits move as they are
      case 1: move_bits<uint8_t>(dst, d, src, s); break;
      case 2: move_bits<uint16_t>(dst, d, src, s); break;
      case 4: move_bits<uint32_t>(dst, d, src, s); break;
      case 8: move_bits<uint64_t>(dst, d, src, s); break;
      case 16: move_bits<double2>(dst, d, src, s); break;
      default: store(dst, d, dst_dtype, load(src, s, src_dtype)); break;
    }
  }
}

}  // namespace

bool copyable_dtype(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Bool: case ScalarType::Byte: case ScalarType::Char: case ScalarType::Short: case ScalarType::Int: case ScalarType::Long: case ScalarType::UInt16: case ScalarType::UInt32:
    case ScalarType::UInt64: case ScalarType::Half: case ScalarType::BFloat16: case ScalarType::Float: case ScalarType::Double:
      return true;
    default:
      return false;
  }
}

cudaError_t strided_copy(const View& dst, const View& src, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return cudaSuccess;
  Shape shape{};
  shape.dims = dst.dims;
  for (int32_t k = 0; k < dst.dims; ++k) {
    shape.sizes[k] = dst.sizes[k];
    shape.dst_strides[k] = dst.strides[k];
    shape.src_strides[k] = src.strides[k];
  }
  const int32_t same_bytes = dst.dtype == src.dtype ? static_cast<int32_t>(scalar_type_size(dst.dtype).value_or(0)) : 0;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((numel + kThreads - 1) / kThreads, 65535);
  copy_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(dst.data, dst.dtype, src.data, src.dtype, shape,
                                                                     numel, same_bytes);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
