// The checks of check_call (robot.h) for host tensors the library copies:
// the inputs alone. Private to librobot.
#pragma once

#include <span>

#include "ptbundle/robot.h"

namespace ptb::robot::detail {

Status check_inputs(std::span<const TensorInfo> input_specs, std::span<const TensorView> inputs, int device);

}  // namespace ptb::robot::detail
