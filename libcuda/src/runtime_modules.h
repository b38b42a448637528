// Finding and loading the runtime modules (runtime_module.h), one runtime
// per process (runner.h says why).
#pragma once

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "runner/runtime_module.h"

namespace ptb::detail {

// The module for `kind` (Builtin or LibTorch), loaded on first use. Fails
// naming where it looked, or when the other runtime already serves the
// process.
Result<const RuntimeModule*> runtime_module(AotiRuntime kind);

// The runtime that already serves this process, if any.
std::optional<AotiRuntime> process_runtime();

}  // namespace ptb::detail
