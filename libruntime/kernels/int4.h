// The weight-only int4 product's kernels (int4.cu), for engines/int4.cc:
// x [m, k] bfloat16 times weights in the layout _convert_weight_to_int4pack
// gives them (int4_layout.h), dequantized per group of k as
// w = (q - 8) * scale + zero, accumulated in float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ptb::builtin::kernels {

struct Int4Mm {
  const __nv_bfloat16* x = nullptr;
  int64_t x_row = 0, x_col = 1;  // strides in elements
  const int32_t* weights = nullptr;
  int64_t k_super = 0;            // weights.size(1)
  int inner_tiles = 0;            // 2 * weights.size(3)
  const __nv_bfloat16* scales = nullptr;  // [k/group, n, 2], strides below
  int64_t scale_strides[3] = {};
  int64_t m = 0, n = 0, k = 0, group = 0;
  int group_shift = 0;            // group = 1 << group_shift
  __nv_bfloat16* out = nullptr;   // [m, n], contiguous
};

// out = x @ dequantized weights^T directly: a block owns 8 columns (one
// n-block) and up to 8 rows of x, so each packed word is read once per row
// tile. Launched in order on `stream`; the caller checks the launch's error.
void int4_direct(const Int4Mm& p, cudaStream_t stream);

// w [n, k] bfloat16, row-major = the dequantized weights (n * k < 2^31);
// the launch's error.
cudaError_t int4_dequantize_into(const Int4Mm& p, __nv_bfloat16* w, cudaStream_t stream);

}  // namespace ptb::builtin::kernels
