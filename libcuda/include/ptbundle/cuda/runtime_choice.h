// Which runtime can serve an AOTInductor library, decided from its ELF before
// it is loaded (runner.h describes the two): a library naming libtorch among
// its dependencies (DT_NEEDED) needs the LibTorch runtime; one compiled with
// aot_inductor.link_libtorch=False needs only the aoti_torch_* shims and the
// CUDA runtime, which the built-in runtime provides, unless it imports a
// shim the built-in runtime lacks (the shim table, kernels/aoti_shims.h):
// then every such name is given in one error, with the fix, so that a load
// never fails halfway. Also what this build has of each runtime.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runner_config.h"
#include "ptbundle/kernels/elf_imports.h"

namespace ptb {

#if defined(PTB_HAVE_LIBTORCH)
inline constexpr bool kLibTorchRunnerBuilt = true;
#else
inline constexpr bool kLibTorchRunnerBuilt = false;
#endif
#if defined(PTB_HAVE_BUILTIN_RUNTIME)
inline constexpr bool kBuiltinRuntimeBuilt = true;
#else
inline constexpr bool kBuiltinRuntimeBuilt = false;
#endif
inline constexpr bool kRunnerBuilt = kBuiltinRuntimeBuilt || kLibTorchRunnerBuilt;

// What CMake said of LibTorch, without its own hint.
std::string libtorch_status();
// "2.11.0", or "" without LibTorch.
std::string libtorch_version();

inline constexpr const char* kLibTorchFlags =
    "-DPTB_LIBTORCH=ON -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')";

// Why this build cannot run parts, and the CMake flags that add a runtime;
// empty when it can.
std::string runner_unavailable_reason();

struct RuntimeAvailability {
  bool builtin = kBuiltinRuntimeBuilt;
  bool libtorch = kLibTorchRunnerBuilt;
};

struct RuntimeChoice {
  AotiRuntime kind = AotiRuntime::Builtin;  // Builtin or LibTorch
  std::string reason;
  std::vector<std::string> imports;  // the aoti_* functions the library imports
};

// `library` is the part's shared library; `origin` names it in errors.
Result<RuntimeChoice> choose_runtime(Bytes library, const std::string& origin, AotiRuntime wanted,
                                     RuntimeAvailability available = {});

}  // namespace ptb
