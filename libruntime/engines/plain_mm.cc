// Weight-only integer matrix products on ExecuTorch's plain layouts
// (plain_layout.h): int4/int5/int6/int8_plain_mm, what its CUDA backend's
// quantized Linear compiles to. out [m, n] bfloat16 = x [m, k] bfloat16
// times the dequantized weights transposed, accumulated in float32.
//
// ExecuTorch's own kernels quantize x to int8 per 32 values and multiply
// with dp4a; these dequantize each weight exactly and multiply by x as
// given, so they match a dequantize-then-Linear reference more closely
// than ExecuTorch's runtime does.
//
// Two ways, by the number of rows (the kernels are kernels/plain_mm.cu): a
// warp per output column over up to 8 rows of x at a time (decoding: one
// pass over the weights per 8 rows); or,
// from kGemmRows rows where cuBLASLt opens, the weights dequantized into a
// bfloat16 [n, k] matrix and one GEMM on the tensor cores. Below kGemmRows
// the direct kernel reads each weight byte at most kGemmRows / 8 times,
// which costs less than writing and reading back 2 bytes a weight.
#include <cuda_bf16.h>

#include <string>

#include "engines/cuda_libraries.h"
#include "engines/plain_mm.h"
#include "engines/weight_only.h"
#include "kernels/plain_mm.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

constexpr int64_t kGemmRows = 64;
constexpr int64_t kGemmWeightBytes = 256ll << 20;

Status dequantized_mm(const kernels::PlainMm& p, const Tensor& x, const Tensor& out, cudaStream_t stream) {
  PTB_TRY(Tensor w, empty_cuda({p.n, static_cast<int64_t>(p.w.k)}, ScalarType::BFloat16, x.storage->device_index));
  cudaError_t code = kernels::plain_dequantize_into(p, static_cast<__nv_bfloat16*>(w.data()), stream);
  if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
  return times_transposed(x, w, out);
}

}  // namespace

namespace ptb::builtin {

Result<Tensor> run_plain_mm(int bits, const PlainArgs& a) {
  PTB_CHECK(check_plain_mm(bits, a));
  const Tensor& x = *a.x;
  kernels::PlainMm p;
  p.m = x.sizes[0];
  p.n = a.ql->sizes[0];
  p.w.bits = bits;
  p.w.k = static_cast<uint32_t>(x.sizes[1]);
  p.w.group = static_cast<uint32_t>(a.group);
  p.w.ql = static_cast<const uint8_t*>(a.ql->data());
  p.w.qh = a.qh ? static_cast<const uint8_t*>(a.qh->data()) : nullptr;
  p.w.scale = static_cast<const uint8_t*>(a.scale->data());
  p.w.scale_step = a.scale_step ? static_cast<const uint16_t*>(a.scale_step->data()) : nullptr;
  p.w.zero = a.zero ? static_cast<const uint8_t*>(a.zero->data()) : nullptr;
  p.w.zero_step = a.zero_step ? static_cast<const uint16_t*>(a.zero_step->data()) : nullptr;
  PTB_TRY(Tensor out, weight_only_output(x, p.n));
  p.x = static_cast<const __nv_bfloat16*>(x.data());
  p.x_row = x.strides[0];
  p.x_col = x.strides[1];
  p.out = static_cast<__nv_bfloat16*>(out.data());
  if (p.m > 0 && p.n > 0) {
    const cudaStream_t stream = stream_for(x);
    const bool gemm = p.m >= kGemmRows && p.w.k > 0 && p.n * p.w.k < (int64_t{1} << 31) &&
                      p.n * p.w.k * 2 <= kGemmWeightBytes && cublas_lt() != nullptr;
    // Where the GEMM cannot run after all, the direct kernel serves.
    if (!gemm || !dequantized_mm(p, x, out, stream).ok()) kernels::plain_direct(p, stream);
    PTB_CHECK(cuda_checked(cudaGetLastError()));
  }
  return out;
}

}  // namespace ptb::builtin
