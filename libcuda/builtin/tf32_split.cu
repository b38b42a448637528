// The operands of a float32 product computed on TF32 tensor cores with
// float32 accuracy (tf32_split.h; gemm.cc says when it serves).
#include <algorithm>

#include "kernels.h"
#include "tf32_split.h"

namespace ptb::builtin::kernels {
namespace {

__global__ void tf32_split_kernel(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride,
                                  float* y, int64_t y_ld, bool small_last) {
  const int64_t total = outer * k;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / k, j = i - o * k;
    const Tf32Parts parts = tf32_parts(x[o * outer_stride + j * k_stride]);
    float* row = y + o * y_ld;
    for (int part = 0; part < 3; ++part) row[part * k + j] = tf32_part(parts, part, small_last);
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
