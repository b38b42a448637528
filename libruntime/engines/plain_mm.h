// The arguments of ExecuTorch's int4/5/6/8_plain_mm ops (plain_mm.cu) and
// their checks, kept apart from the kernels so the CPU tests can read the
// messages.
#pragma once

#include <cstdint>
#include <string>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

struct PlainArgs {
  const Tensor* x = nullptr;
  const Tensor* ql = nullptr;          // int4/int8: qdata
  const Tensor* qh = nullptr;          // int5/int6
  const Tensor* scale = nullptr;
  const Tensor* scale_step = nullptr;  // int6: steps
  const Tensor* zero = nullptr;        // int4/5/8
  const Tensor* zero_step = nullptr;   // int4/5
  int64_t group = 0;
};

// Whether `a` is a valid call of the op for `bits` (4, 5, 6 or 8); the
// error says why not.
// ExecuTorch's rules: k a multiple of 256 where an fp16 step covers 256
// weights; groups that tile k (a power of 2 for int4, a multiple of 32 for
// int5 and int8, of 8 for int6); every tensor contiguous and on the GPU,
// which is checked last.
Status check_plain_mm(int bits, const PlainArgs& a);

// A new [m, n] bfloat16 tensor: x times the dequantized weights
// transposed (plain_mm.cu), after check_plain_mm.
Result<Tensor> run_plain_mm(int bits, const PlainArgs& a);

}  // namespace ptb::builtin
