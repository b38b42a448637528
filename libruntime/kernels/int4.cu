// The weight-only int4 product's kernels (int4.h): the direct kernel and
// the dequantization into bfloat16 weights for the GEMM way.
#include "kernels/int4.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/int4_layout.h"

namespace ptb::builtin::kernels {
namespace {

constexpr int kWarps = 8;

// A lane's words of one outer tile: `pairs` consecutive int32 (4, 8 or 16
// bytes), in one load where the layout's base is aligned for it.
template <int kPairs>
__device__ inline void load_words(const int32_t* at, bool vector, uint32_t words[kPairs]) {
  if constexpr (kPairs == 4) {
    if (vector) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(at));
      words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
      return;
    }
  } else if constexpr (kPairs == 2) {
    if (vector) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(at));
      words[0] = v.x, words[1] = v.y;
      return;
    }
  }
#pragma unroll
  for (int pair = 0; pair < kPairs; ++pair) words[pair] = static_cast<uint32_t>(__ldg(at + pair));
}

// x[row][k] and x[row][k + 1] (k even) as floats.
__device__ inline float2 x_pair(const Int4Mm& p, int64_t row, int64_t k, bool x_pairs) {
  const __nv_bfloat16* at = p.x + row * p.x_row + k * p.x_col;
  if (x_pairs) return __bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(at)));
  return make_float2(__bfloat162float(at[0]), __bfloat162float(at[p.x_col]));
}

// Block (nb, row tile): columns nb*8 .. nb*8 + 7 over kRows rows. Warp w
// takes the outer tiles w, w + kWarps, ...; lane l holds the words lane l of
// each tile has (column nb*8 + l/4, 4 pairs of neighbouring k per word),
// loading the next tile's words before it multiplies this one's. Each warp
// copies the tile's x (kRows rows of kPairs * 32 values) into its own
// shared memory first, every lane's loads in flight at once: read where it
// lies, x would cost one latency per load, 128 in a row for 16 rows. Groups
// are 32 to 256 weights, powers of two, so a pair of 16-wide tiles has one
// scale and zero, found by a shift.
template <int kRows, int kPairs>
__global__ void __launch_bounds__(kWarps * 32) int4_mm(Int4Mm p, bool vector_words, bool x_pairs) {
  constexpr int kTiles = 2 * kPairs, kTileK = kTiles * 16;
  __shared__ __align__(16) float staged[kWarps * kRows * kTileK];
  __shared__ float partial[kWarps * kRows * 8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t nb = blockIdx.x;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int rows = static_cast<int>(p.m - m0 < kRows ? p.m - m0 : kRows);
  const int64_t column = nb * 8 + lane / 4;
  const int32_t* words_at = p.weights + (nb * p.k_super * 32 + lane) * kPairs;  // + outer * 32 * kPairs
  const __nv_bfloat16* scales_at = p.scales + column * p.scale_strides[1];
  const int lane_k = (lane % 4) * 2;
  float* xs = staged + warp * kRows * kTileK;  // [kRows][kTileK], this warp's
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0;
  uint32_t next[kPairs];
  if (warp < p.k_super) load_words<kPairs>(words_at + warp * 32 * kPairs, vector_words, next);
  for (int64_t outer = warp; outer < p.k_super; outer += kWarps) {
    uint32_t words[kPairs];
#pragma unroll
    for (int pair = 0; pair < kPairs; ++pair) words[pair] = next[pair];
    if (outer + kWarps < p.k_super) load_words<kPairs>(words_at + (outer + kWarps) * 32 * kPairs, vector_words, next);
    __syncwarp();  // the last tile's reads of xs are done
#pragma unroll
    for (int i = lane; i < kRows * kTileK / 2; i += 32) {
      const int r = i / (kTileK / 2), c = (i % (kTileK / 2)) * 2;
      const float2 x = r < rows ? x_pair(p, m0 + r, outer * kTileK + c, x_pairs) : make_float2(0.f, 0.f);
      *reinterpret_cast<float2*>(xs + r * kTileK + c) = x;
    }
    __syncwarp();
#pragma unroll
    for (int pair = 0; pair < kPairs; ++pair) {
      const int64_t k_pair = (outer * kTiles + 2 * pair) * 16;  // the pair of tiles' first k
      const int local_pair = pair * 32;
      const __nv_bfloat16* sz = scales_at + (k_pair >> p.group_shift) * p.scale_strides[0];
      const float scale = __bfloat162float(sz[0]);
      const float offset = __bfloat162float(sz[p.scale_strides[2]]) - 8.f * scale;
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {  // (second tile, high half): the nibble at bit slot * 4
        const int shift = slot * 4;
        const float w0 = static_cast<float>((words[pair] >> shift) & 0xfu) * scale + offset;
        const float w1 = static_cast<float>((words[pair] >> (16 + shift)) & 0xfu) * scale + offset;
        const int k = local_pair + (slot / 2) * 16 + (slot % 2) * 8 + lane_k;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float2 x = *reinterpret_cast<const float2*>(xs + r * kTileK + k);
          acc[r] = fmaf(x.x, w0, acc[r]);
          acc[r] = fmaf(x.y, w1, acc[r]);
        }
      }
    }
  }
  // The four lanes of a column hold its k in quarters; then the warps'
  // shares meet in shared memory.
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 1);
    acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 2);
  }
  if (lane % 4 == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[(warp * kRows + r) * 8 + lane / 4] = acc[r];
  }
  __syncthreads();
  if (threadIdx.x < kRows * 8) {
    const int r = threadIdx.x / 8, c = threadIdx.x % 8;
    float sum = 0;
    for (int w = 0; w < kWarps; ++w) sum += partial[(w * kRows + r) * 8 + c];
    if (r < rows) p.out[(m0 + r) * p.n + nb * 8 + c] = __float2bfloat16_rn(sum);
  }
}

template <int kRows, int kPairs>
void launch(const Int4Mm& p, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(p.n / 8), static_cast<unsigned>((p.m + kRows - 1) / kRows));
  const bool vector_words = reinterpret_cast<uintptr_t>(p.weights) % (4 * kPairs) == 0;
  const bool x_pairs = p.x_col == 1 && p.x_row % 2 == 0 && reinterpret_cast<uintptr_t>(p.x) % 4 == 0;
  int4_mm<kRows, kPairs><<<grid, kWarps * 32, 0, stream>>>(p, vector_words, x_pairs);
}

template <int kRows>
void launch(const Int4Mm& p, cudaStream_t stream) {
  if (p.inner_tiles == 8) launch<kRows, 4>(p, stream);
  else if (p.inner_tiles == 4) launch<kRows, 2>(p, stream);
  else launch<kRows, 1>(p, stream);
}

// w[n][k] = the dequantized weight (n, k), bfloat16, row-major. n * k < 2^31.
// A thread per packed word, whose 8 nibbles are 4 pairs of neighbours in k:
// coalesced reads, one bfloat16 pair written per pair.
__global__ void int4_dequantize(Int4Mm p, __nv_bfloat16* w) {
  const uint32_t words = static_cast<uint32_t>(p.n * p.k / 8), k_size = static_cast<uint32_t>(p.k);
  const uint32_t tiles = static_cast<uint32_t>(p.inner_tiles);
  const uint32_t k_super = static_cast<uint32_t>(p.k_super), group = static_cast<uint32_t>(p.group);
  for (uint32_t word = blockIdx.x * blockDim.x + threadIdx.x; word < words; word += gridDim.x * blockDim.x) {
    const uint32_t bits = static_cast<uint32_t>(__ldg(p.weights + word));
#pragma unroll
    for (uint32_t slot = 0; slot < 4; ++slot) {
      const Int4Weight at = int4_weight_at(word, slot * 4, k_super, tiles);  // parity 0; k + 1 is at bit + 16
      const __nv_bfloat16* sz = p.scales + (at.k / group) * p.scale_strides[0] + at.n * p.scale_strides[1];
      const float scale = __bfloat162float(sz[0]), zero = __bfloat162float(sz[p.scale_strides[2]]) - 8.f * scale;
      const float even = static_cast<float>((bits >> (slot * 4)) & 0xfu) * scale + zero;
      const float odd = static_cast<float>((bits >> (16 + slot * 4)) & 0xfu) * scale + zero;
      *reinterpret_cast<__nv_bfloat162*>(w + static_cast<uint64_t>(at.n) * k_size + at.k) = __floats2bfloat162_rn(even, odd);
    }
  }
}

}  // namespace

void int4_direct(const Int4Mm& p, cudaStream_t stream) {
  // The row tile that wastes no rows for a token or two, and reads the
  // weights once per 8 rows for more.
  if (p.m == 1) launch<1>(p, stream);
  else if (p.m == 2) launch<2>(p, stream);
  else if (p.m <= 4) launch<4>(p, stream);
  else launch<8>(p, stream);
}

cudaError_t int4_dequantize_into(const Int4Mm& p, __nv_bfloat16* w, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((p.n * p.k / 8 + kThreads - 1) / kThreads, 1 << 16);
  int4_dequantize<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, w);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
