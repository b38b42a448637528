// Draws into a contiguous GPU tensor on the runtime's generator
// (random_state.h), as torch.rand, torch.randn and torch.randint fill one.
#pragma once

#include <cstdint>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

// Uniform in [0, 1); a floating dtype.
Status random_uniform(const Tensor& out);
// Standard normal; a floating dtype.
Status random_normal(const Tensor& out);
// Integers in [low, high).
Status random_integers(const Tensor& out, int64_t low, int64_t high);

}  // namespace ptb::builtin
