// The kernels of ExecuTorch's int4/5/6/8_plain_mm (plain_mm.cu), for
// engines/plain_mm.cc: out [m, n] bfloat16 = x [m, k] bfloat16 times the
// weights of plain_layout.h dequantized and transposed, accumulated in
// float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/plain_layout.h"

namespace ptb::builtin::kernels {

struct PlainMm {
  PlainWeights w;
  const __nv_bfloat16* x = nullptr;
  int64_t x_row = 0, x_col = 1;  // strides in elements
  int64_t m = 0, n = 0;
  __nv_bfloat16* out = nullptr;  // [m, n], contiguous
};

// The direct way: a warp per output column over up to 8 rows of x at a
// time. Launched in order on `stream`; the caller checks the launch's error.
void plain_direct(const PlainMm& p, cudaStream_t stream);

// w [n, k] bfloat16, row-major = the dequantized weights (n * k < 2^31);
// the launch's error.
cudaError_t plain_dequantize_into(const PlainMm& p, __nv_bfloat16* w, cudaStream_t stream);

}  // namespace ptb::builtin::kernels
