// The middle of attention: scores -> probabilities, one block per row of
// the [batch*heads, Lq, Lk] score matrix, with the scale, the additive bias
// (broadcast by strides), the causal mask and the row's log-sum-exp. And
// all of attention for short key sequences, one warp per query row, with
// the same rules.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "kernels.h"
#include "ptbundle/base/dtype.h"

namespace ptb::builtin::kernels {
namespace {


constexpr int kThreads = 256;

__device__ float load_float(const void* base, int64_t at, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Half: return __half2float(static_cast<const __half*>(base)[at]);
    case ScalarType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[at]);
    case ScalarType::Double: return static_cast<float>(static_cast<const double*>(base)[at]);
    default: return static_cast<const float*>(base)[at];
  }
}

__device__ void store_float(void* base, int64_t at, int32_t dtype, float value) {
  switch (dtype) {
    case ScalarType::Half: static_cast<__half*>(base)[at] = __float2half_rn(value); break;
    case ScalarType::BFloat16: static_cast<__nv_bfloat16*>(base)[at] = __float2bfloat16_rn(value); break;
    default: static_cast<float*>(base)[at] = value; break;
  }
}

// Reduces `value` over the block (max or sum); every thread gets the result.
template <bool Max>
__device__ float block_reduce(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmaxf(value, other) : value + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : (Max ? -INFINITY : 0.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmaxf(value, other) : value + other;
  }
  return value;
}

__global__ void softmax_rows(const float* scores, void* probabilities, int32_t probability_dtype, AttentionRows rows) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;  // bh * lq + i
  const int64_t bh = rows.first + row / rows.lq, i = row % rows.lq;
  const int64_t b = bh / rows.heads, h = bh % rows.heads;
  const float* s = scores + row * rows.lk;
  const int64_t bias_row = b * rows.bias_strides[0] + h * rows.bias_strides[1] + i * rows.bias_strides[2];
  const int64_t visible = rows.causal ? min(rows.lk, i + 1) : rows.lk;

  float maximum = -INFINITY;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    float x = s[j] * rows.scale;
    if (rows.bias) x += load_float(rows.bias, bias_row + j * rows.bias_strides[3], rows.bias_dtype);
    maximum = fmaxf(maximum, x);
  }
  maximum = block_reduce<true>(maximum, shared);
  float sum = 0;
  if (maximum != -INFINITY) {
    for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
      float x = s[j] * rows.scale;
      if (rows.bias) x += load_float(rows.bias, bias_row + j * rows.bias_strides[3], rows.bias_dtype);
      sum += expf(x - maximum);
    }
  }
  sum = block_reduce<false>(sum, shared);
  // A row with nothing to attend to gives zeros (and a log-sum-exp of -inf).
  const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
  for (int64_t j = threadIdx.x; j < rows.lk; j += blockDim.x) {
    float p = 0;
    if (j < visible && maximum != -INFINITY) {
      float x = s[j] * rows.scale;
      if (rows.bias) x += load_float(rows.bias, bias_row + j * rows.bias_strides[3], rows.bias_dtype);
      p = expf(x - maximum) * inverse;
    }
    store_float(probabilities, row * rows.lk + j, probability_dtype, p);
  }
  if (threadIdx.x == 0 && rows.lse) {
    rows.lse[b * rows.lse_strides[0] + h * rows.lse_strides[1] + i * rows.lse_strides[2]] =
        sum > 0 ? maximum + logf(sum) : -INFINITY;
  }
}

constexpr int kFusedWarps = 4;

__device__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

__device__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// `value` as the unfused way stores a probability: rounded to `dtype`.
__device__ float rounded(float value, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Half: return __half2float(__float2half_rn(value));
    case ScalarType::BFloat16: return __bfloat162float(__float2bfloat16_rn(value));
    default: return value;
  }
}

__global__ void fused_rows(FusedAttention a) {
  __shared__ float query[kFusedWarps][kFusedMaxDim];
  __shared__ float weights[kFusedWarps][kFusedMaxKeys];
  const AttentionRows& rows = a.rows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kFusedWarps + warp;
  if (row >= rows.batch_heads * rows.lq) return;  // the whole warp: no block-wide barrier follows
  const int64_t bh = row / rows.lq, i = row % rows.lq;
  const int64_t b = bh / rows.heads, h = bh % rows.heads;
  float* q = query[warp];
  float* p = weights[warp];
  const int64_t q_at = b * a.q_strides[0] + h * a.q_strides[1] + i * a.q_strides[2];
  for (int64_t e = lane; e < a.e; e += 32) q[e] = load_float(a.q, q_at + e * a.q_strides[3], a.dtype);
  __syncwarp();
  const int64_t visible = rows.causal ? min(rows.lk, i + 1) : rows.lk;
  const int64_t bias_row = b * rows.bias_strides[0] + h * rows.bias_strides[1] + i * rows.bias_strides[2];
  const int64_t k_base = b * a.k_strides[0] + h * a.k_strides[1];
  float maximum = -INFINITY;
  for (int64_t j = lane; j < visible; j += 32) {
    const int64_t k_at = k_base + j * a.k_strides[2];
    float dot = 0;
    for (int64_t e = 0; e < a.e; ++e) dot = fmaf(q[e], load_float(a.k, k_at + e * a.k_strides[3], a.dtype), dot);
    float x = dot * rows.scale;
    if (rows.bias) x += load_float(rows.bias, bias_row + j * rows.bias_strides[3], rows.bias_dtype);
    p[j] = x;
    maximum = fmaxf(maximum, x);
  }
  maximum = warp_max(maximum);
  float sum = 0;
  if (maximum != -INFINITY) {
    for (int64_t j = lane; j < visible; j += 32) sum += expf(p[j] - maximum);
  }
  sum = warp_sum(sum);
  // A row with nothing to attend to gives zeros (and a log-sum-exp of -inf).
  const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
  for (int64_t j = lane; j < visible; j += 32) {
    p[j] = maximum != -INFINITY ? rounded(expf(p[j] - maximum) * inverse, a.dtype) : 0.0f;
  }
  __syncwarp();
  const int64_t v_base = b * a.v_strides[0] + h * a.v_strides[1];
  const int64_t out_at = b * a.out_strides[0] + h * a.out_strides[1] + i * a.out_strides[2];
  for (int64_t e = lane; e < a.ev; e += 32) {
    float acc = 0;
    for (int64_t j = 0; j < visible; ++j) {
      acc = fmaf(p[j], load_float(a.v, v_base + j * a.v_strides[2] + e * a.v_strides[3], a.dtype), acc);
    }
    store_float(a.out, out_at + e * a.out_strides[3], a.dtype, acc);
  }
  if (lane == 0 && rows.lse) {
    rows.lse[b * rows.lse_strides[0] + h * rows.lse_strides[1] + i * rows.lse_strides[2]] =
        sum > 0 ? maximum + logf(sum) : -INFINITY;
  }
}

}  // namespace

cudaError_t fused_attention(const FusedAttention& attention, cudaStream_t stream) {
  const int64_t count = attention.rows.batch_heads * attention.rows.lq;
  if (count == 0) return cudaSuccess;
  if (attention.rows.lk > kFusedMaxKeys || attention.e > kFusedMaxDim) return cudaErrorInvalidValue;
  const int64_t blocks = (count + kFusedWarps - 1) / kFusedWarps;
  fused_rows<<<static_cast<unsigned>(blocks), kFusedWarps * 32, 0, stream>>>(attention);
  return cudaGetLastError();
}

cudaError_t attention_softmax(const float* scores, void* probabilities, int32_t probability_dtype,
                              const AttentionRows& rows, cudaStream_t stream) {
  const int64_t count = rows.batch_heads * rows.lq;
  if (count == 0 || rows.lk == 0) return cudaSuccess;
  softmax_rows<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(scores, probabilities, probability_dtype, rows);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
