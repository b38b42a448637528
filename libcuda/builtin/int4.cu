// Weight-only int4 matrix product: _weight_int4pack_mm, what torchao's
// int4 weight-only Linear compiles to. The weights are in the layout
// _convert_weight_to_int4pack gives them for the tensor cores (tinygemm's):
// [n/8, k/(tiles*16), 32, tiles/2] int32, eight 4-bit values a word. Word
// (nb, outer, lane, pair) holds the weights of column nb*8 + lane/4 at
// k = (outer*tiles + 2*pair + second)*16 + (lane%4 + 4*high)*2 + parity, the
// nibble at bit parity*16 + (second*2 + high)*4. Dequantized as ATen does:
// w = (q - 8) * scale + zero, per group of k; accumulated in float32.
//
// Two ways, chosen per shape (route_check.h): directly, where a block owns
// 8 columns (one n-block) and up to kRows rows of x, so each packed word is
// read once per row tile instead of once per output (lane l of a warp reads
// the words lane l of the layout holds, which are all its own column's; the
// block's warps split k by outer tile; x for the tiles in flight is staged
// in shared memory as float32, and the warps' partial sums meet in shared
// memory at the end); or, for more rows, the weights dequantized into a
// bfloat16 [n, k] matrix and one cuBLASLt GEMM on the tensor cores, as
// tinygemm multiplies bfloat16 weights. The first call of a shape runs both,
// and the GEMM serves only when it is faster and agrees.
#include <cuda_bf16.h>

#include <cstdio>
#include <tuple>

#include "int4_layout.h"
#include "route_check.h"
#include "shim_support.h"
#include "weight_only.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

constexpr int kWarps = 8;
constexpr int kMaxTiles = 8;  // tinygemm's inner k tiles are 2, 4 or 8
constexpr int kMaxTileK = kMaxTiles * 16;

struct Int4Mm {
  const __nv_bfloat16* x = nullptr;
  int64_t x_row = 0, x_col = 1;  // strides in elements
  const int32_t* weights = nullptr;
  int64_t k_super = 0;            // weights.size(1)
  int inner_tiles = 0;            // 2 * weights.size(3)
  const __nv_bfloat16* scales = nullptr;  // [k/group, n, 2], strides below
  int64_t scale_strides[3] = {};
  int64_t m = 0, n = 0, k = 0, group = 0;
  __nv_bfloat16* out = nullptr;   // [m, n], contiguous
};

template <int kRows>
__global__ void __launch_bounds__(kWarps * 32) int4_mm(Int4Mm p) {
  __shared__ __align__(16) float staged[kRows * kWarps * kMaxTileK];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t nb = blockIdx.x;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int64_t column = nb * 8 + lane / 4;
  const int tile_k = p.inner_tiles * 16, pairs = p.inner_tiles / 2;
  constexpr int pitch = kWarps * kMaxTileK;  // floats per staged row
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0;

  for (int64_t base = 0; base < p.k_super; base += kWarps) {
    const int64_t left = p.k_super - base;
    const int tiles_now = left < kWarps ? static_cast<int>(left) : kWarps;
    const int span = tiles_now * tile_k;
    const int64_t k0 = base * tile_k;
    // This warp's words and its column's scales first, all loads at once:
    // they are in flight while x is staged.
    const bool mine = warp < tiles_now;
    const int64_t outer = base + (mine ? warp : 0);
    const int32_t* words = p.weights + ((nb * p.k_super + outer) * 32 + lane) * pairs;
    uint32_t word[kMaxTiles / 2];
    float scale[kMaxTiles], zero[kMaxTiles];
#pragma unroll
    for (int pair = 0; pair < kMaxTiles / 2; ++pair) {
      word[pair] = mine && pair < pairs ? static_cast<uint32_t>(__ldg(words + pair)) : 0u;
    }
#pragma unroll
    for (int tile = 0; tile < kMaxTiles; ++tile) {
      scale[tile] = zero[tile] = 0.f;
      if (!mine || tile >= p.inner_tiles) continue;
      const int64_t g = ((outer * p.inner_tiles + tile) * 16) / p.group;
      const __nv_bfloat16* sz = p.scales + g * p.scale_strides[0] + column * p.scale_strides[1];
      scale[tile] = __bfloat162float(sz[0]);
      zero[tile] = __bfloat162float(sz[p.scale_strides[2]]);
    }
    __syncthreads();  // the last round's reads of `staged` are done
    for (int i = threadIdx.x; i < kRows * span; i += blockDim.x) {
      const int r = i / span, c = i - r * span;
      const int64_t row = m0 + r;
      staged[r * pitch + c] = row < p.m ? __bfloat162float(p.x[row * p.x_row + (k0 + c) * p.x_col]) : 0.f;
    }
    __syncthreads();
    if (!mine) continue;
    const float* xs = staged + warp * tile_k + (lane % 4) * 2;
#pragma unroll
    for (int tile = 0; tile < kMaxTiles; ++tile) {
      if (tile >= p.inner_tiles) break;
      const uint32_t bits = word[tile / 2];
      const int second = tile % 2;
      const float offset = zero[tile] - 8.f * scale[tile];
#pragma unroll
      for (int high = 0; high < 2; ++high) {
        const int shift = (second * 2 + high) * 4;
        const float w0 = static_cast<float>((bits >> shift) & 0xfu) * scale[tile] + offset;
        const float w1 = static_cast<float>((bits >> (16 + shift)) & 0xfu) * scale[tile] + offset;
        const int at = tile * 16 + high * 8;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float2 pair_x = *reinterpret_cast<const float2*>(xs + r * pitch + at);
          acc[r] = fmaf(pair_x.x, w0, acc[r]);
          acc[r] = fmaf(pair_x.y, w1, acc[r]);
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
  __syncthreads();
  float* partial = staged;  // [kWarps][kRows][8]
  if (lane % 4 == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) partial[(warp * kRows + r) * 8 + lane / 4] = acc[r];
  }
  __syncthreads();
  if (threadIdx.x < kRows * 8) {
    const int r = threadIdx.x / 8, c = threadIdx.x % 8;
    float sum = 0;
    for (int w = 0; w < kWarps; ++w) sum += partial[(w * kRows + r) * 8 + c];
    const int64_t row = m0 + r;
    if (row < p.m) p.out[row * p.n + nb * 8 + c] = __float2bfloat16_rn(sum);
  }
}

template <int kRows>
void launch(const Int4Mm& p, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(p.n / 8), static_cast<unsigned>((p.m + kRows - 1) / kRows));
  int4_mm<kRows><<<grid, kWarps * 32, 0, stream>>>(p);
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

// The GEMM way, into out [m, n]; its bfloat16 weights are made on every call.
Status dequantized_mm(const Int4Mm& p, const Tensor& x, const Tensor& out, cudaStream_t stream) {
  std::string why;
  auto w = empty_cuda({p.n, p.k}, ScalarType::BFloat16, x.storage->device_index, why);
  if (!w) return invalid(why);
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((p.n * p.k / 8 + kThreads - 1) / kThreads, 1 << 16);
  int4_dequantize<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, static_cast<__nv_bfloat16*>(w->data()));
  if (cudaError_t code = cudaGetLastError(); code != cudaSuccess) return invalid(cudaGetErrorString(code));
  return times_transposed(x, *w, out);
}

void launch_direct(const Int4Mm& p, cudaStream_t stream) {
  // The row tile that wastes no rows for a token or two, and reads the
  // weights once per 8 rows for more.
  if (p.m == 1) launch<1>(p, stream);
  else if (p.m == 2) launch<2>(p, stream);
  else if (p.m <= 4) launch<4>(p, stream);
  else launch<8>(p, stream);
}

// The GEMM way is tried for this many rows or more (below, the direct
// kernel reads the weights about as few times as the GEMM does) and for
// weights of at most this many bfloat16 bytes once dequantized.
constexpr int64_t kGemmRows = 5;
constexpr int64_t kGemmWeightBytes = 256ll << 20;

struct Int4Shape {
  int device;
  int64_t m, n, k, group;
  int inner_tiles;
  bool operator<(const Int4Shape& o) const {
    return std::tie(device, m, n, k, group, inner_tiles) < std::tie(o.device, o.m, o.n, o.k, o.group, o.inner_tiles);
  }
};

// out = x @ dequantized weights, by the way this shape's first call chose;
// that call (outside a capture) times both and compares their results.
Status int4_mm_into(const Int4Mm& p, const Tensor& x, const Tensor& out, cudaStream_t stream) {
  const bool eligible = p.m >= kGemmRows && p.n * p.k < (int64_t{1} << 31) && p.n * p.k * 2 <= kGemmWeightBytes;
  if (!eligible) {
    launch_direct(p, stream);
    return {};
  }
  const Int4Shape shape{x.storage->device_index, p.m, p.n, p.k, p.group, p.inner_tiles};
  // Per shape: whether the GEMM way serves.
  auto& choices = RouteChoices<Int4Shape>::process();
  std::lock_guard lock(choices.mutex);
  if (auto found = choices.chosen.find(shape); found != choices.chosen.end()) {
    if (found->second) return dequantized_mm(p, x, out, stream);
    launch_direct(p, stream);
    return {};
  }
  if (capturing(stream)) {
    launch_direct(p, stream);
    return {};
  }
  std::string why;
  auto other = empty_cuda(out.sizes, ScalarType::BFloat16, x.storage->device_index, why);
  if (!other) return invalid(why);
  bool ran = true;
  const float gemm_ms = mean_ms(stream, [&] { ran = ran && dequantized_mm(p, x, *other, stream).ok(); });
  const float direct_ms = mean_ms(stream, [&] { launch_direct(p, stream); });
  // The direct kernel's float32 weights against bfloat16 ones: a few
  // bfloat16 roundings of the output apart (eager's tinygemm differs from
  // the direct kernel by 6e-3 of the largest value on 16x4096x4096).
  const std::optional<Agreement> agreement = ran ? compare(*other, out) : std::nullopt;
  const bool agrees = agreement && agreement->within(2e-2);
  const bool gemm = agrees && gemm_ms >= 0 && direct_ms >= 0 && gemm_ms < 0.9f * direct_ms;
  if (ran && !agrees) {
    std::fprintf(stderr,
                 "ptbundle aoti runtime: _weight_int4pack_mm %lldx%lldx%lld: the dequantized GEMM disagrees with the "
                 "direct kernel (max difference %g of %g); the direct kernel serves it\n",
                 static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                 agreement ? agreement->difference : -1.0, agreement ? agreement->largest : -1.0);
  }
  if (tracing()) {
    std::fprintf(stderr, "_weight_int4pack_mm %lldx%lldx%lld: GEMM %.4f ms against direct %.4f ms: %s\n",
                 static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k), gemm_ms,
                 direct_ms, gemm ? "GEMM" : "direct");
  }
  choices.chosen[shape] = gemm;
  return {};  // `out` holds the direct kernel's result, the last one written
}

std::string check(const Tensor& x, const Tensor& weights, int64_t group, const Tensor& scales) {
  if (x.dtype != ScalarType::BFloat16 || x.sizes.size() != 2) return "self " + tensor_text(x) + "; expected bfloat16 [m, k]";
  if (weights.dtype != ScalarType::Int || weights.sizes.size() != 4 || !weights.is_contiguous() ||
      weights.sizes[2] != 32 || (weights.sizes[3] != 1 && weights.sizes[3] != 2 && weights.sizes[3] != 4)) {
    return "mat2 " + tensor_text(weights) + "; expected contiguous int32 [n/8, k/(tiles*16), 32, tiles/2], tiles 2, 4 or 8, from _convert_weight_to_int4pack";
  }
  const int64_t k = x.sizes[1], n = weights.sizes[0] * 8, tiles = weights.sizes[3] * 2;
  if (weights.sizes[1] * tiles * 16 != k) return "mat2 " + tensor_text(weights) + " does not hold k = " + std::to_string(k);
  if (group != 32 && group != 64 && group != 128 && group != 256) {
    return "qGroupSize " + std::to_string(group) + "; expected 32, 64, 128 or 256";
  }
  if (scales.dtype != ScalarType::BFloat16 || scales.sizes.size() != 3 || scales.sizes[0] != k / group ||
      scales.sizes[1] != n || scales.sizes[2] != 2 || k % group != 0) {
    return "qScaleAndZeros " + tensor_text(scales) + "; expected bfloat16 [" + std::to_string(k / group) + ", " +
           std::to_string(n) + ", 2]";
  }
  if (x.storage->device_type != kDeviceCuda || weights.storage->device_type != kDeviceCuda ||
      scales.storage->device_type != kDeviceCuda) {
    return "the tensors are not on the GPU";
  }
  return "";
}

}  // namespace

AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2, int64_t qGroupSize,
                                                   AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda__weight_int4pack_mm";
  PTB_NEED(self, function);
  PTB_NEED(mat2, function);
  PTB_NEED(qScaleAndZeros, function);
  const Tensor& x = *tensor_of(self);
  const Tensor& weights = *tensor_of(mat2);
  const Tensor& scales = *tensor_of(qScaleAndZeros);
  std::string why = check(x, weights, qGroupSize, scales);
  if (!why.empty()) return fail(function, why);
  Int4Mm p;
  p.m = x.sizes[0];
  p.k = x.sizes[1];
  p.n = weights.sizes[0] * 8;
  p.group = qGroupSize;
  p.k_super = weights.sizes[1];
  p.inner_tiles = static_cast<int>(weights.sizes[3] * 2);
  auto out = weight_only_output(x, p.n, why);
  if (!out) return fail(function, why);
  p.x = static_cast<const __nv_bfloat16*>(x.data());
  p.x_row = x.strides[0];
  p.x_col = x.strides[1];
  p.weights = static_cast<const int32_t*>(weights.data());
  p.scales = static_cast<const __nv_bfloat16*>(scales.data());
  for (int d = 0; d < 3; ++d) p.scale_strides[d] = scales.strides[d];
  p.out = static_cast<__nv_bfloat16*>(out->data());
  if (p.m > 0 && p.n > 0) {
    if (Status done = int4_mm_into(p, x, *out, stream_for(x)); !done.ok()) return fail(function, done.error().message);
    if (check_launch(function) != kShimSuccess) return kShimFailure;
  }
  return hand_to_library(function, std::move(*out), ret0);
}
