// Which runtime can serve an AOTInductor library, decided from its ELF before
// it is loaded: a library naming libtorch among its dependencies (DT_NEEDED)
// needs the LibTorch runner; one compiled with aot_inductor.link_libtorch=False
// needs only the aoti_torch_* shims and the CUDA runtime, which the built-in
// runtime provides, unless it imports a shim the built-in runtime lacks
// (an ATen fallback such as SDPA's efficient attention): then every such name
// is given in one error, with the fix, so that a load never fails halfway.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/kernels/elf_imports.h"

namespace ptb {

// The aoti_torch_* functions the built-in runtime provides, sorted (the
// module's exports are checked against this list by the tests).
const std::vector<std::string>& builtin_aoti_shims();

// The DT_NEEDED entries that make a library need LibTorch (libtorch*.so,
// libc10*.so); empty for a link_libtorch=False library.
std::vector<std::string> libtorch_dependencies(const ElfDynamicSymbols& symbols);

// The aoti_* functions the library imports and the built-in runtime lacks.
std::vector<std::string> missing_builtin_shims(const ElfDynamicSymbols& symbols);

// One line naming every missing shim, grouped by what fixes it.
std::string missing_shims_message(const std::string& origin, const std::vector<std::string>& missing);

struct RuntimeAvailability {
  bool builtin = kBuiltinRuntimeBuilt;
  bool libtorch = kLibTorchRunnerBuilt;
};

struct RuntimeChoice {
  AotiRuntime kind = AotiRuntime::Builtin;  // Builtin or LibTorch
  std::string reason;
};

// `library` is the part's shared library; `origin` names it in errors.
Result<RuntimeChoice> choose_runtime(Bytes library, const std::string& origin, AotiRuntime wanted,
                                     RuntimeAvailability available = {});

}  // namespace ptb
