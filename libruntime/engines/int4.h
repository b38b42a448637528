// The weight-only int4 matrix product of _weight_int4pack_mm (int4.cu).
#pragma once

#include <cstdint>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

// A new [m, n] bfloat16 tensor: x [m, k] bfloat16 times the weights
// _convert_weight_to_int4pack packed ([n/8, k/(tiles*16), 32, tiles/2]
// int32), dequantized per `group` of k with scales [k/group, n, 2] bfloat16
// as w = (q - 8) * scale + zero.
Result<Tensor> int4pack_mm(const Tensor& x, const Tensor& weights, int64_t group, const Tensor& scales);

}  // namespace ptb::builtin
