// Weight-only int4 matrix product: _weight_int4pack_mm, what torchao's
// int4 weight-only Linear compiles to. The weights are in the layout
// _convert_weight_to_int4pack gives them for the tensor cores (tinygemm's):
// [n/8, k/(tiles*16), 32, tiles/2] int32, eight 4-bit values a word, the
// positions below. Each warp computes one output element, dequantizing as
// it goes (w = (q - 8) * scale + zero, per group of k), accumulating in
// float32 as ATen does.
#include <cuda_bf16.h>

#include "shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

struct Int4Mm {
  const __nv_bfloat16* x = nullptr;
  int64_t x_row = 0, x_col = 1;  // strides in elements
  const int32_t* weights = nullptr;
  int64_t k_super = 0;            // weights.size(1)
  int64_t inner_tiles = 0;        // 2 * weights.size(3)
  const __nv_bfloat16* scales = nullptr;  // [k/group, n, 2], strides below
  int64_t scale_strides[3] = {};
  int64_t m = 0, n = 0, k = 0, group = 0;
  __nv_bfloat16* out = nullptr;   // [m, n], contiguous
};

// The 4-bit value of weight (n, k) in the packed words.
__device__ int quantized(const Int4Mm& p, int64_t n, int64_t k) {
  const int64_t tile = k / 16, outer = tile / p.inner_tiles, inner = tile % p.inner_tiles;
  const int64_t pair = inner / 2, second = inner % 2;
  const int64_t lane_k = (k % 16) / 2;
  const int64_t thread = (n % 8) * 4 + lane_k % 4;
  const int64_t slot = second * 2 + (lane_k >= 4 ? 1 : 0);
  const int64_t word = (((n / 8) * p.k_super + outer) * 32 + thread) * (p.inner_tiles / 2) + pair;
  const int shift = static_cast<int>((k % 2 == 0 ? 0 : 16) + slot * 4);
  return (static_cast<uint32_t>(p.weights[word]) >> shift) & 0xf;
}

__global__ void int4_mm(Int4Mm p) {
  const int warps = blockDim.x / 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32;
  const int64_t m = blockIdx.y;
  const int lane = threadIdx.x % 32;
  if (n >= p.n || m >= p.m) return;
  float sum = 0;
  for (int64_t k = lane; k < p.k; k += 32) {
    const int64_t g = k / p.group;
    const float scale = __bfloat162float(p.scales[g * p.scale_strides[0] + n * p.scale_strides[1]]);
    const float zero = __bfloat162float(p.scales[g * p.scale_strides[0] + n * p.scale_strides[1] + p.scale_strides[2]]);
    const float w = static_cast<float>(quantized(p, n, k) - 8) * scale + zero;
    sum += __bfloat162float(p.x[m * p.x_row + k * p.x_col]) * w;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) p.out[m * p.n + n] = __float2bfloat16_rn(sum);
}

std::string check(const Tensor& x, const Tensor& weights, int64_t group, const Tensor& scales) {
  if (x.dtype != ScalarType::BFloat16 || x.sizes.size() != 2) return "self " + tensor_text(x) + "; expected bfloat16 [m, k]";
  if (weights.dtype != ScalarType::Int || weights.sizes.size() != 4 || !weights.is_contiguous() ||
      weights.sizes[2] != 32 || weights.sizes[3] < 1) {
    return "mat2 " + tensor_text(weights) + "; expected contiguous int32 [n/8, k/(tiles*16), 32, tiles/2] from _convert_weight_to_int4pack";
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
  p.inner_tiles = weights.sizes[3] * 2;
  auto out = empty_cuda({p.m, p.n}, ScalarType::BFloat16, x.storage->device_index, why);
  if (!out) return fail(function, why);
  if (p.m > 65535) return fail(function, "self has " + std::to_string(p.m) + " rows; at most 65535 here");
  p.x = static_cast<const __nv_bfloat16*>(x.data());
  p.x_row = x.strides[0];
  p.x_col = x.strides[1];
  p.weights = static_cast<const int32_t*>(weights.data());
  p.scales = static_cast<const __nv_bfloat16*>(scales.data());
  for (int d = 0; d < 3; ++d) p.scale_strides[d] = scales.strides[d];
  p.out = static_cast<__nv_bfloat16*>(out->data());
  if (p.m > 0 && p.n > 0) {
    constexpr int kWarps = 4;
    dim3 grid(static_cast<unsigned>((p.n + kWarps - 1) / kWarps), static_cast<unsigned>(p.m));
    int4_mm<<<grid, kWarps * 32, 0, stream_for(x)>>>(p);
    if (check_launch(function) != kShimSuccess) return kShimFailure;
  }
  return hand_to_library(function, std::move(*out), ret0);
}
