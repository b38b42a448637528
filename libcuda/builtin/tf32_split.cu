// The operands of a float32 product computed on TF32 tensor cores with
// float32 accuracy (kernels.h, tf32_split; gemm.cc says when it serves).
#include <algorithm>

#include "kernels.h"

namespace ptb::builtin::kernels {
namespace {

// x = big + small, with big exactly a TF32 value (10-bit significand,
// rounded to nearest) and small the exact remainder. A value that rounding
// would carry to infinity is truncated instead; infinities and NaN stay in
// big, so that the product sees them as a float32 product would.
__device__ inline void split(float x, float& big, float& small) {
  const uint32_t bits = __float_as_uint(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) {
    big = x;
    small = 0.0f;
    return;
  }
  uint32_t rounded = (bits + 0x1000u) & ~0x1fffu;
  if ((rounded & 0x7f800000u) == 0x7f800000u) rounded = bits & ~0x1fffu;
  big = __uint_as_float(rounded);
  small = x - big;
}

__global__ void tf32_split_kernel(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride,
                                  float* y, int64_t y_ld, bool small_last) {
  const int64_t total = outer * k;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / k, j = i - o * k;
    float big, small;
    split(x[o * outer_stride + j * k_stride], big, small);
    float* row = y + o * y_ld;
    row[j] = big;
    row[k + j] = small_last ? big : small;
    row[2 * k + j] = small_last ? small : big;
  }
}

}  // namespace

cudaError_t tf32_split(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride, float* y,
                       int64_t y_ld, bool small_last, cudaStream_t stream) {
  const int64_t total = outer * k;
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 65535 * 8);
  tf32_split_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, outer, k, outer_stride, k_stride, y, y_ld,
                                                                            small_last);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
