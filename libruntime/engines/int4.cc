// Weight-only int4 matrix product: _weight_int4pack_mm, what torchao's
// int4 weight-only Linear compiles to. The weights are in the layout
// _convert_weight_to_int4pack gives them for the tensor cores (tinygemm's):
// [n/8, k/(tiles*16), 32, tiles/2] int32, eight 4-bit values a word. Word
// (nb, outer, lane, pair) holds the weights of column nb*8 + lane/4 at
// k = (outer*tiles + 2*pair + second)*16 + (lane%4 + 4*high)*2 + parity, the
// nibble at bit parity*16 + (second*2 + high)*4. Dequantized as ATen does:
// w = (q - 8) * scale + zero, per group of k; accumulated in float32.
//
// Two ways, chosen per shape (route_check.h), the kernels in
// kernels/int4.cu: directly, where a block owns
// 8 columns (one n-block) and up to kRows rows of x, so each packed word is
// read once per row tile instead of once per output (lane l of a warp reads
// the words lane l of the layout holds, which are all its own column's, in
// one load per tile; the block's warps split k by outer tile, and their
// partial sums meet in shared memory at the end); or, for more rows, the
// weights dequantized into a bfloat16 [n, k] matrix and one cuBLASLt GEMM
// on the tensor cores, as tinygemm multiplies bfloat16 weights. The first
// call of a shape runs both, and the GEMM serves only when it is faster and
// agrees.
#include <cuda_bf16.h>

#include <cstdio>
#include <tuple>

#include "engines/int4.h"
#include "engines/route_check.h"
#include "engines/weight_only.h"
#include "kernels/int4.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// The GEMM way, into out [m, n]; its bfloat16 weights are made on every call.
Status dequantized_mm(const kernels::Int4Mm& p, const Tensor& x, const Tensor& out, cudaStream_t stream) {
  PTB_TRY(auto w, empty_cuda({p.n, p.k}, ScalarType::BFloat16, x.storage->device_index));
  cudaError_t code = kernels::int4_dequantize_into(p, static_cast<__nv_bfloat16*>(w.data()), stream);
  if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
  return times_transposed(x, w, out);
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
Status int4_mm_into(const kernels::Int4Mm& p, const Tensor& x, const Tensor& out, cudaStream_t stream) {
  const bool eligible = p.m >= kGemmRows && p.n * p.k < (int64_t{1} << 31) && p.n * p.k * 2 <= kGemmWeightBytes;
  if (!eligible) {
    kernels::int4_direct(p, stream);
    return {};
  }
  const Int4Shape shape{x.storage->device_index, p.m, p.n, p.k, p.group, p.inner_tiles};
  // Per shape: whether the GEMM way serves.
  auto& choices = RouteChoices<Int4Shape>::process();
  std::lock_guard lock(choices.mutex);
  if (auto found = choices.chosen.find(shape); found != choices.chosen.end()) {
    if (found->second) return dequantized_mm(p, x, out, stream);
    kernels::int4_direct(p, stream);
    return {};
  }
  if (capturing(stream)) {
    kernels::int4_direct(p, stream);
    return {};
  }
  PTB_TRY(auto other, empty_cuda(out.sizes, ScalarType::BFloat16, x.storage->device_index));
  bool ran = true;
  const float gemm_ms = mean_ms(stream, Timing::gpu, [&] { ran = ran && dequantized_mm(p, x, other, stream).ok(); });
  const float direct_ms = mean_ms(stream, Timing::gpu, [&] { kernels::int4_direct(p, stream); });
  // The direct kernel's float32 weights against bfloat16 ones: a few
  // bfloat16 roundings of the output apart (eager's tinygemm differs from
  // the direct kernel by 6e-3 of the largest value on 16x4096x4096).
  const std::optional<Agreement> agreement = ran ? compare(other, out) : std::nullopt;
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

Status check(const Tensor& x, const Tensor& weights, int64_t group, const Tensor& scales) {
  if (x.dtype != ScalarType::BFloat16 || x.sizes.size() != 2) return invalid("self " + tensor_text(x) + "; expected bfloat16 [m, k]");
  if (weights.dtype != ScalarType::Int || weights.sizes.size() != 4 || !weights.is_contiguous() ||
      weights.sizes[2] != 32 || (weights.sizes[3] != 1 && weights.sizes[3] != 2 && weights.sizes[3] != 4)) {
    return invalid("mat2 " + tensor_text(weights) + "; expected contiguous int32 [n/8, k/(tiles*16), 32, tiles/2], tiles 2, 4 or 8, from _convert_weight_to_int4pack");
  }
  const int64_t k = x.sizes[1], n = weights.sizes[0] * 8, tiles = weights.sizes[3] * 2;
  if (weights.sizes[1] * tiles * 16 != k) return invalid("mat2 " + tensor_text(weights) + " does not hold k = " + std::to_string(k));
  if (group != 32 && group != 64 && group != 128 && group != 256) {
    return invalid("qGroupSize " + std::to_string(group) + "; expected 32, 64, 128 or 256");
  }
  if (scales.dtype != ScalarType::BFloat16 || scales.sizes.size() != 3 || scales.sizes[0] != k / group ||
      scales.sizes[1] != n || scales.sizes[2] != 2 || k % group != 0) {
    return invalid("qScaleAndZeros " + tensor_text(scales) + "; expected bfloat16 [" + std::to_string(k / group) +
                   ", " + std::to_string(n) + ", 2]");
  }
  if (x.storage->device_type != kDeviceCuda || weights.storage->device_type != kDeviceCuda ||
      scales.storage->device_type != kDeviceCuda) {
    return invalid("the tensors are not on the GPU");
  }
  return {};
}

}  // namespace

namespace ptb::builtin {

Result<Tensor> int4pack_mm(const Tensor& x, const Tensor& weights, int64_t group, const Tensor& scales) {
  PTB_CHECK(check(x, weights, group, scales));
  kernels::Int4Mm p;
  p.m = x.sizes[0];
  p.k = x.sizes[1];
  p.n = weights.sizes[0] * 8;
  p.group = group;
  while ((int64_t{1} << p.group_shift) < p.group) ++p.group_shift;  // check() allows 32, 64, 128, 256
  p.k_super = weights.sizes[1];
  p.inner_tiles = static_cast<int>(weights.sizes[3] * 2);
  PTB_TRY(Tensor out, weight_only_output(x, p.n));
  p.x = static_cast<const __nv_bfloat16*>(x.data());
  p.x_row = x.strides[0];
  p.x_col = x.strides[1];
  p.weights = static_cast<const int32_t*>(weights.data());
  p.scales = static_cast<const __nv_bfloat16*>(scales.data());
  for (int d = 0; d < 3; ++d) p.scale_strides[d] = scales.strides[d];
  p.out = static_cast<__nv_bfloat16*>(out.data());
  if (p.m > 0 && p.n > 0) {
    PTB_CHECK(int4_mm_into(p, x, out, stream_for(x)));
    PTB_CHECK(cuda_checked(cudaGetLastError()));
  }
  return out;
}

}  // namespace ptb::builtin
