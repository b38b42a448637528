// The plain-layout weight-only products' kernels (plain_mm.h): a
// warp per output column over up to 8 rows of x, and the dequantization
// into bfloat16 weights for the GEMM way.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/plain_layout.h"
#include "kernels/plain_mm.h"

namespace ptb::builtin::kernels {
namespace {

constexpr int kWarps = 8;


// The low bits of weights (n, k0) .. (n, k0 + 31), four octets: where the
// whole chunk lies in a row that keeps 16-byte alignment (`wide`), in one
// 16-byte load (two for int8), else an octet at a time.
__device__ inline void load_chunk(const PlainWeights& w, uint32_t n, uint32_t k0, bool wide, PlainLow low[4]) {
  if (wide) {
    const uint8_t* at = w.ql + plain_low_offset(w, n, k0);
    const uint4 a = __ldg(reinterpret_cast<const uint4*>(at));
    if (w.bits == 8) {
      const uint4 b = __ldg(reinterpret_cast<const uint4*>(at + 16));
      low[0].word[0] = a.x, low[0].word[1] = a.y, low[1].word[0] = a.z, low[1].word[1] = a.w;
      low[2].word[0] = b.x, low[2].word[1] = b.y, low[3].word[0] = b.z, low[3].word[1] = b.w;
    } else {
      low[0].word[0] = a.x, low[1].word[0] = a.y, low[2].word[0] = a.z, low[3].word[0] = a.w;
    }
    return;
  }
#pragma unroll
  for (int o = 0; o < 4; ++o)
    if (k0 + 8 * o < w.k) low[o] = plain_low8(w, n, k0 + 8 * o);
}

// A warp per output column n. Lane l takes the chunks of 32 weights
// [32c, 32c + 32) for c = l, l + 32, ...: their low bits from one 16-byte
// load (load_chunk), the group's scale and zero decoded once per chunk where
// groups are whole chunks (else once per 8 weights), and x's 8 values per
// octet from one 16-byte load where x is dense and aligned. With a warp per
// column, the bytes a lane has in flight are what keeps the memory busy:
// four chunks (64 bytes) a lane.
template <int kRows>
__global__ void __launch_bounds__(kWarps * 32) plain_mm(PlainMm p, bool x_vector, bool wide) {
  const int lane = threadIdx.x % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kRows;
  if (n >= p.n) return;  // the whole warp: n is the warp's
  const int rows = static_cast<int>(p.m - m0 < kRows ? p.m - m0 : kRows);
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0;
  const uint32_t column = static_cast<uint32_t>(n);
  const bool group_per_chunk = p.w.group % 32 == 0;
#pragma unroll 4
  for (uint32_t k0 = lane * 32; k0 < p.w.k; k0 += 32 * 32) {
    PlainLow low[4];
    load_chunk(p.w, column, k0, wide && k0 + 32 <= p.w.k, low);
    PlainGroup group = plain_group(p.w, column, k0);
#pragma unroll
    for (int o = 0; o < 4; ++o) {
      const uint32_t ko = k0 + 8 * o;
      if (ko >= p.w.k) break;
      if (o > 0 && !group_per_chunk) group = plain_group(p.w, column, ko);
      float weights[8];
      plain_weights8(p.w, column, ko, low[o], group, weights);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= rows) break;
        const __nv_bfloat16* xs = p.x + (m0 + r) * p.x_row + static_cast<int64_t>(ko) * p.x_col;
        if (x_vector) {
          const uint4 packed = __ldg(reinterpret_cast<const uint4*>(xs));
          const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&packed);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 two = __bfloat1622float2(pairs[j]);
            acc[r] = fmaf(two.x, weights[2 * j], acc[r]);
            acc[r] = fmaf(two.y, weights[2 * j + 1], acc[r]);
          }
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[r] = fmaf(__bfloat162float(xs[j * p.x_col]), weights[j], acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
    if (lane == 0 && r < rows) p.out[(m0 + r) * p.n + n] = __float2bfloat16_rn(acc[r]);
  }
}

template <int kRows>
void launch(const PlainMm& p, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((p.n + kWarps - 1) / kWarps), static_cast<unsigned>((p.m + kRows - 1) / kRows));
  // x's 8 values at k0 in one 16-byte load: dense rows, 16-byte aligned.
  const bool x_vector = p.x_col == 1 && p.x_row % 8 == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
  // Every row's chunks at 16-byte boundaries: rows of a multiple of 16 bytes.
  const uint32_t row_bytes = p.w.bits == 8 ? p.w.k : p.w.k / 2;
  const bool wide = row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(p.w.ql) % 16 == 0;
  plain_mm<kRows><<<grid, kWarps * 32, 0, stream>>>(p, x_vector, wide);
}

// w[n][k] = the dequantized weight (n, k), bfloat16, row-major; n * k < 2^31.
// A thread per 8 weights, stored as one 16-byte word (k is a multiple of 8).
__global__ void plain_dequantize(PlainWeights weights, uint32_t n_size, __nv_bfloat16* w) {
  const uint32_t per_row = weights.k / 8, total = n_size * per_row;
  for (uint32_t index = blockIdx.x * blockDim.x + threadIdx.x; index < total; index += gridDim.x * blockDim.x) {
    const uint32_t n = index / per_row, k0 = (index % per_row) * 8;
    float values[8];
    plain_weights8(weights, n, k0, values);
    __align__(16) __nv_bfloat162 pairs[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) pairs[j] = __floats2bfloat162_rn(values[2 * j], values[2 * j + 1]);
    *reinterpret_cast<uint4*>(w + static_cast<uint64_t>(n) * weights.k + k0) = *reinterpret_cast<const uint4*>(pairs);
  }
}

}  // namespace

void plain_direct(const PlainMm& p, cudaStream_t stream) {
  if (p.m == 1) launch<1>(p, stream);
  else if (p.m == 2) launch<2>(p, stream);
  else if (p.m <= 4) launch<4>(p, stream);
  else launch<8>(p, stream);
}

cudaError_t plain_dequantize_into(const PlainMm& p, __nv_bfloat16* w, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((p.n * p.w.k / 8 + kThreads - 1) / kThreads, 1 << 16);
  plain_dequantize<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p.w, static_cast<uint32_t>(p.n), w);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
