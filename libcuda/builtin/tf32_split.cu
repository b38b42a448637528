// The operands of a float32 product computed on TF32 tensor cores with
// float32 accuracy (tf32_split.h; gemm.cc says when it serves).
#include <algorithm>

#include "kernels.h"
#include "tf32_split.h"

namespace ptb::builtin::kernels {
namespace {

// Rows over blockIdx.y, elements of a row over x: no division per element.
__global__ void tf32_split_kernel(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride,
                                  float* y, int64_t y_ld, bool small_last) {
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    const float* in = x + o * outer_stride;
    float* row = y + o * y_ld;
    for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < k;
         j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      const Tf32Parts parts = tf32_parts(in[j * k_stride]);
      for (int part = 0; part < 3; ++part) row[part * k + j] = tf32_part(parts, part, small_last);
    }
  }
}

}  // namespace

cudaError_t tf32_split(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride, float* y,
                       int64_t y_ld, bool small_last, cudaStream_t stream) {
  if (outer == 0 || k == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((k + kThreads - 1) / kThreads, 1024)),
                  static_cast<unsigned>(std::min<int64_t>(outer, 65535)));
  tf32_split_kernel<<<grid, kThreads, 0, stream>>>(x, outer, k, outer_stride, k_stride, y, y_ld, small_last);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
