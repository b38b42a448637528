// The columns of a batch-1 2-d convolution (im2col.h), one thread an element.
#include <algorithm>

#include "im2col.h"
#include "kernels.h"

namespace ptb::builtin {
namespace {

__global__ void im2col_kernel(Im2col g, const float* x, float* columns, int64_t total) {
  for (int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    columns[index] = im2col_at(g, x, index);
  }
}

}  // namespace

namespace kernels {

cudaError_t im2col(const Im2col& geometry, const float* x, float* columns, cudaStream_t stream) {
  const int64_t total = geometry.rows() * geometry.columns();
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 16);
  im2col_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(geometry, x, columns, total);
  return cudaGetLastError();
}

}  // namespace kernels
}  // namespace ptb::builtin
