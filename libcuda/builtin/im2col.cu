// The columns of a batch-1 2-d convolution (im2col.h).
#include "im2col.h"
#include "kernels.h"

namespace ptb::builtin {
namespace {

// Block k fills row k: its channel and tap are found once per thread, and
// an element costs a 32-bit division (its output row) and a load.
// convolution.cc takes this route for at most 4,096 positions, so positions
// fit 32 bits.
__global__ void im2col_kernel(Im2col g, const float* x, float* columns) {
  const int positions = static_cast<int>(g.columns()), out_w = static_cast<int>(g.out_w);
  const int64_t k = blockIdx.x;
  const Im2colTap tap = im2col_tap(g, k);
  float* row = columns + k * positions;
  for (int p = threadIdx.x; p < positions; p += blockDim.x) {
    const int oh = p / out_w;
    row[p] = im2col_value(g, x, tap, oh, p - oh * out_w);
  }
}

}  // namespace

namespace kernels {

cudaError_t im2col(const Im2col& geometry, const float* x, float* columns, cudaStream_t stream) {
  const int64_t positions = geometry.columns(), rows = geometry.rows();
  if (positions == 0 || rows == 0) return cudaSuccess;
  if (positions > (int64_t{1} << 30) || rows >= (int64_t{1} << 31)) return cudaErrorInvalidValue;
  im2col_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(geometry, x, columns);
  return cudaGetLastError();
}

}  // namespace kernels
}  // namespace ptb::builtin
