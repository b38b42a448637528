// Both runtimes are shared objects loaded at run time rather than linked:
//
//   - LibTorch costs every subcommand when linked (about half a second and
//     half a gigabyte for `ptbundle --version`), and must not be present at
//     all for the built-in runtime to own the aoti_torch_* names;
//   - a library built with link_libtorch=False finds its aoti_torch_* and
//     cuda* imports only in the process's global scope. Exporting them from
//     the executable (-rdynamic or a version script) would make every
//     program that links ptbundle (tests, a robot program) add linker flags,
//     and would put them in the global scope of a process that later loads
//     LibTorch, where a libtorch-linked library would bind to them. A module
//     loaded RTLD_GLOBAL only when a link_libtorch=False library is run
//     keeps them out of every other process.
//
// Modules are looked for only where ptbundle is installed, or in
// $PTBUNDLE_RUNTIME_DIR, and loaded only from files no other user can have
// written (module_folders.h).
#include "runtime_modules.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "module_folders.h"
#include "ptbundle/cuda/runtime_choice.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  const RuntimeModule* module = nullptr;
  std::string failure;
};

std::mutex modules_mutex;
std::optional<AotiRuntime> serving;
Loaded builtin_loaded, libtorch_loaded;

const char* file_name(AotiRuntime kind) {
  return kind == AotiRuntime::Builtin ? PTB_BUILTIN_RUNTIME_FILE : PTB_LIBTORCH_RUNTIME_FILE;
}

Loaded load(AotiRuntime kind) {
  Loaded loaded;
  const char* name = file_name(kind);
  std::string looked;
  for (const std::string& folder : runtime_module_folders()) {
    const fs::path candidate = fs::path(folder) / name;
    std::error_code ec;
    if (!fs::exists(candidate, ec)) {
      looked += (looked.empty() ? "" : ", ") + folder;
      continue;
    }
    // The first module found decides: one that may not be trusted is
    // refused, not passed over for another.
    if (std::string why = module_refusal(candidate.string()); !why.empty()) {
      loaded.failure = "refusing to load the runtime module: " + why +
                       "; another user could have put code there that would run as you. Install ptbundle with its "
                       "modules owned by root or by you and not writable by others";
      return loaded;
    }
    // The built-in runtime must be global (see above); the LibTorch runtime
    // makes LibTorch global itself, and keeps its own code local.
    const int mode = RTLD_NOW | (kind == AotiRuntime::Builtin ? RTLD_GLOBAL : RTLD_LOCAL);
    void* handle = ::dlopen(candidate.c_str(), mode);
    if (!handle) {
      loaded.failure = candidate.string() + ": cannot load: " + ::dlerror();
      return loaded;
    }
    auto entry = reinterpret_cast<PtbRuntimeModuleEntry>(::dlsym(handle, kRuntimeModuleEntry));
    const RuntimeModule* module = entry ? entry() : nullptr;
    if (!module || module->abi != kRuntimeModuleAbi) {
      loaded.failure = candidate.string() + ": not a runtime module of this ptbundle (expected " +
                       kRuntimeModuleEntry + " with ABI " + std::to_string(kRuntimeModuleAbi) + ")";
      return loaded;
    }
    loaded.module = module;
    return loaded;
  }
  loaded.failure = std::string(name) + " not found (looked in " + looked +
                   ", where this ptbundle is installed; or set PTBUNDLE_RUNTIME_DIR)";
  return loaded;
}

}  // namespace

std::optional<AotiRuntime> process_runtime() {
  std::lock_guard lock(modules_mutex);
  return serving;
}

Result<const RuntimeModule*> runtime_module(AotiRuntime kind) {
  std::lock_guard lock(modules_mutex);
  if (kind == AotiRuntime::Builtin && !kBuiltinRuntimeBuilt) {
    return usage_error(std::string("the built-in runtime is not in this build (") + PTB_BUILTIN_RUNTIME_STATUS + ")");
  }
  if (kind == AotiRuntime::LibTorch && !kLibTorchRunnerBuilt) {
    return usage_error("this build has no LibTorch runtime (" + libtorch_status() + "); rebuild with " +
                       kLibTorchFlags);
  }
  if (serving && *serving != kind) {
    return invalid(std::string(*serving == AotiRuntime::Builtin
                                   ? "the built-in runtime already serves this process, and its aoti_torch_* "
                                     "functions are what LibTorch and a libtorch-linked library would bind to"
                                   : "LibTorch already serves this process, and a link_libtorch=False library "
                                     "would bind to its aoti_torch_* functions, not the built-in runtime's") +
                   "; load parts of the other kind in another process");
  }
  Loaded& slot = kind == AotiRuntime::Builtin ? builtin_loaded : libtorch_loaded;
  if (!slot.module && slot.failure.empty()) slot = load(kind);
  if (!slot.module) return invalid(slot.failure);
  serving = kind;
  return slot.module;
}

}  // namespace ptb::detail
