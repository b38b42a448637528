// The middle of attention: scores -> probabilities, one block per row of
// the [batch*heads, Lq, Lk] score matrix, with the scale, the additive bias
// (broadcast by strides), the causal mask and the row's log-sum-exp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "kernels/kernels.h"
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

}  // namespace

cudaError_t attention_softmax(const float* scores, void* probabilities, int32_t probability_dtype,
                              const AttentionRows& rows, cudaStream_t stream) {
  const int64_t count = rows.batch_heads * rows.lq;
  if (count == 0 || rows.lk == 0) return cudaSuccess;
  softmax_rows<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(scores, probabilities, probability_dtype, rows);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
