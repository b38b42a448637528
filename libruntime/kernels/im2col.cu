// The columns of a batch-1 2-d convolution (im2col.h).
#include "kernels/im2col.h"
#include "kernels/kernels.h"

namespace ptb::builtin {
namespace {

// A block fills a kTile x kTile tile of the [K, P] columns. Each of its
// rows' taps and each of its columns' output positions is decoded once, into
// shared memory, so that an element costs its address and one load rather
// than a decode per element, which left the kernel waiting on memory. Stores
// run along P. Loads run along whichever of k and p is contiguous in the
// input: along p (a row of output positions) for NCHW; along k (channels)
// for a channels-last input under a channels-last weight, through a
// transpose in shared memory.
constexpr int kTile = 32;
constexpr int kPasses = 4;  // the block is kTile x (kTile / kPasses) threads

__global__ void im2col_kernel(Im2col g, const float* __restrict__ x, float* __restrict__ columns, bool k_contiguous) {
  __shared__ float tile[kTile][kTile + 1];
  __shared__ int tap_c[kTile], tap_h[kTile], tap_w[kTile], at_h[kTile], at_w[kTile];
  const int64_t rows = g.rows(), positions = g.columns();
  const int64_t k0 = static_cast<int64_t>(blockIdx.x) * kTile, p0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (ty == 0 && k0 + tx < rows) {
    const Im2colTap t = im2col_tap(g, k0 + tx);
    tap_c[tx] = static_cast<int>(t.c);
    tap_h[tx] = static_cast<int>(t.i * g.dilation_h - g.pad_h);
    tap_w[tx] = static_cast<int>(t.j * g.dilation_w - g.pad_w);
  }
  if (ty == 1 && p0 + tx < positions) {
    const int64_t p = p0 + tx, oh = p / g.out_w;
    at_h[tx] = static_cast<int>(oh * g.step_h);
    at_w[tx] = static_cast<int>((p - oh * g.out_w) * g.step_w);
  }
  __syncthreads();
  auto value = [&](int k, int p) {
    const int ih = at_h[p] + tap_h[k], iw = at_w[p] + tap_w[k];
    if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return 0.f;
    return x[tap_c[k] * g.stride_c + ih * g.stride_h + iw * g.stride_w];
  };
  const int64_t k_end = rows - k0, p_end = positions - p0;
  if (k_contiguous) {
    for (int pass = 0; pass < kPasses; ++pass) {
      const int p = ty + pass * (kTile / kPasses);
      if (tx < k_end && p < p_end) tile[p][tx] = value(tx, p);
    }
    __syncthreads();
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    const int k = ty + pass * (kTile / kPasses);
    if (k < k_end && tx < p_end) columns[(k0 + k) * positions + p0 + tx] = k_contiguous ? tile[tx][k] : value(k, tx);
  }
}

}  // namespace

namespace kernels {

cudaError_t im2col(const Im2col& geometry, const float* x, float* columns, cudaStream_t stream) {
  const int64_t positions = geometry.columns(), rows = geometry.rows();
  if (positions == 0 || rows == 0) return cudaSuccess;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, position_tiles = (positions + kTile - 1) / kTile;
  // Offsets within a tap and a position are ints in the kernel.
  const Im2col& g = geometry;
  bool small = g.channels < (int64_t{1} << 31);
  for (int64_t v : {g.height, g.width, g.pad_h, g.pad_w, g.out_h * g.step_h, g.out_w * g.step_w,
                    g.kernel_h * g.dilation_h, g.kernel_w * g.dilation_w})
    small = small && v >= 0 && v < (int64_t{1} << 30);
  if (row_tiles >= (int64_t{1} << 31) || position_tiles > 65535 || !small) return cudaErrorInvalidValue;
  const bool k_contiguous = geometry.channels_inner && geometry.stride_c == 1;
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(position_tiles));
  im2col_kernel<<<grid, dim3(kTile, kTile / kPasses), 0, stream>>>(geometry, x, columns, k_contiguous);
  return cudaGetLastError();
}

}  // namespace kernels
}  // namespace ptb::builtin
