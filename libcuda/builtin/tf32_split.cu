// The operands of a float32 product computed on TF32 tensor cores with
// float32 accuracy (tf32_split.h; gemm.cc says when it serves).
#include <algorithm>

#include "kernels.h"
#include "tf32_split.h"

namespace ptb::builtin::kernels {
namespace {

// With kFast true the threads of a block run along k (the source's
// contiguous dimension) and blocks over the rows; otherwise along the rows
// and blocks over k. Either way reads and writes are coalesced, since
// split_layout gives y the source's orientation; the slow
// dimension over blockIdx.y spares a 64-bit division per element.
template <bool kFast>
__global__ void tf32_split_kernel(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride,
                                  float* y, int64_t y_outer_stride, int64_t y_k_stride, bool small_last) {
  const int64_t slow = kFast ? outer : k, fast = kFast ? k : outer;
  for (int64_t s = blockIdx.y; s < slow; s += gridDim.y) {
    for (int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; f < fast;
         f += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      tf32_split_element(x, kFast ? s : f, kFast ? f : s, k, outer_stride, k_stride, y, y_outer_stride, y_k_stride,
                         small_last);
    }
  }
}

}  // namespace

cudaError_t tf32_split(const float* x, int64_t outer, int64_t k, int64_t outer_stride, int64_t k_stride, float* y,
                       int64_t y_outer_stride, int64_t y_k_stride, bool small_last, cudaStream_t stream) {
  if (outer == 0 || k == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const bool k_fast = k_stride == 1;
  const int64_t slow = k_fast ? outer : k, fast = k_fast ? k : outer;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((fast + kThreads - 1) / kThreads, 1024)),
                  static_cast<unsigned>(std::min<int64_t>(slow, 65535)));
  if (k_fast) {
    tf32_split_kernel<true><<<grid, kThreads, 0, stream>>>(x, outer, k, outer_stride, k_stride, y, y_outer_stride,
                                                           y_k_stride, small_last);
  } else {
    tf32_split_kernel<false><<<grid, kThreads, 0, stream>>>(x, outer, k, outer_stride, k_stride, y, y_outer_stride,
                                                            y_k_stride, small_last);
  }
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
