// Matrix products on cuBLASLt (gemm.cc), for the GEMM shims and for the
// shims built on them (attention).
#pragma once

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

enum class Activation { None, Relu, Gelu };  // Gelu: the tanh approximation, as ATen's epilogue

// out = act(beta * self + alpha * mat1 @ mat2), self broadcast to out's
// [M, N]; all 2-d on the GPU, one dtype.
Status addmm_into(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta,
                  double alpha, Activation activation);

// out = alpha * a @ b + beta * out, 2-d or batched 3-d (batch strides
// uniform), a and b of one dtype, out of that dtype or float32 (the
// accumulation's, for attention scores).
Status matmul(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta);

// out = beta * self + alpha * batch1 @ batch2, self broadcast to out's
// [B, M, N]; all 3-d on the GPU, one dtype.
Status baddbmm_into(const Tensor& out, const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta,
                    double alpha);

// out = a @ b, 2-d or batched 3-d.
Status mm_into(const Tensor& out, const Tensor& a, const Tensor& b);

}  // namespace ptb::builtin
