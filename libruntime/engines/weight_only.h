// What the weight-only products share around their kernels: int4.cu
// (tinygemm's packed int4) and plain_mm.cu (ExecuTorch's plain layouts)
// both multiply x [m, k] bfloat16 by n rows of packed weights into a new
// [m, n] bfloat16 tensor, directly or through the weights dequantized into
// a bfloat16 [n, k] matrix and one cuBLASLt GEMM.
#pragma once

#include "ptbundle/base/result.h"
#include "engines/tensor.h"

namespace ptb::builtin {

// The product's [m, n] output for x [m, k]. The direct kernels tile x's
// rows by up to 8 in grid.y, whose limit bounds m.
Result<Tensor> weight_only_output(const Tensor& x, int64_t n);

// out = x @ w^T on cuBLASLt, w the dequantized weights, bfloat16 [n, k].
Status times_transposed(const Tensor& x, const Tensor& w, const Tensor& out);

}  // namespace ptb::builtin
