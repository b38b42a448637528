#include "ptbundle/cuda/runtime_choice.h"

#include <algorithm>

#include "ptbundle/kernels/aoti_shims.h"

namespace ptb {
namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// "aoti_torch_clone, aoti_torch_cuda_mm_out, ... (29 functions)": what a
// libtorch-linked library takes from LibTorch, by name.
std::string libtorch_imports_text(const std::vector<std::string>& imports) {
  if (imports.empty()) return "no aoti_* function";
  constexpr size_t kShown = 8;
  std::vector<std::string> shown(imports.begin(), imports.begin() + std::min(imports.size(), kShown));
  return joined(shown) + (imports.size() > kShown ? ", ..." : "") + " (" + std::to_string(imports.size()) +
         (imports.size() == 1 ? " function)" : " functions)");
}

}  // namespace

std::string libtorch_status() {
  std::string found = PTB_LIBTORCH_STATUS;
  return found.substr(0, found.find(';'));
}

std::string libtorch_version() { return PTB_LIBTORCH_VERSION; }

std::string runner_unavailable_reason() {
  if (kRunnerBuilt) return "";
  return std::string("ptbundle run needs the CUDA toolkit (for its built-in AOTInductor runtime) or LibTorch, and "
                     "this build has neither (") + PTB_BUILTIN_RUNTIME_STATUS + "; " + libtorch_status() +
         "); rebuild with the CUDA toolkit installed, or with " + kLibTorchFlags;
}

const char* aoti_runtime_name(AotiRuntime runtime) {
  switch (runtime) {
    case AotiRuntime::Auto: return "auto";
    case AotiRuntime::Builtin: return "builtin";
    case AotiRuntime::LibTorch: return "libtorch";
  }
  return "?";
}

std::optional<AotiRuntime> parse_aoti_runtime(const std::string& text) {
  for (AotiRuntime runtime : {AotiRuntime::Auto, AotiRuntime::Builtin, AotiRuntime::LibTorch})
    if (text == aoti_runtime_name(runtime)) return runtime;
  return std::nullopt;
}

Result<RuntimeChoice> choose_runtime(Bytes library, const std::string& origin, AotiRuntime wanted,
                                     RuntimeAvailability available) {
  PTB_TRY(ElfDynamicSymbols symbols, read_dynamic_symbols(library, origin));
  std::vector<std::string> imports;
  for (const std::string& name : symbols.undefined)
    if (starts_with(name, "aoti_")) imports.push_back(name);
  const std::vector<std::string> libtorch = libtorch_dependencies(symbols);
  const std::string no_libtorch_runner = "this build has no LibTorch runtime (" + libtorch_status() +
                                         "); rebuild with " + kLibTorchFlags;

  if (wanted == AotiRuntime::LibTorch) {
    if (!available.libtorch) return usage_error("--runtime libtorch: " + no_libtorch_runner);
    return RuntimeChoice{AotiRuntime::LibTorch, "asked for", imports};
  }
  if (!libtorch.empty()) {
    const std::string linked = origin + ": the library is linked to LibTorch (it needs " + joined(libtorch) +
                               " and imports " + libtorch_imports_text(imports) +
                               " from it; compiled with aot_inductor.link_libtorch=True, PyTorch's default)";
    if (wanted == AotiRuntime::Builtin) {
      return invalid(linked + "; the built-in runtime runs libraries compiled with "
                              "aot_inductor.link_libtorch=False (as ExecuTorch's CUDA backend compiles them)");
    }
    if (!available.libtorch) {
      return invalid(linked + ", and " + no_libtorch_runner +
                     ", or compile the part with aot_inductor.link_libtorch=False as ExecuTorch's CUDA backend does");
    }
    return RuntimeChoice{AotiRuntime::LibTorch, "the library is linked to LibTorch (" + joined(libtorch) + ")", imports};
  }
  const std::vector<std::string> missing = missing_builtin_shims(imports);
  if (!missing.empty()) {
    if (wanted == AotiRuntime::Auto && available.libtorch) {
      return RuntimeChoice{AotiRuntime::LibTorch, "the built-in runtime lacks " + joined(missing), imports};
    }
    return invalid(missing_shims_message(origin, missing));
  }
  if (!available.builtin) {
    if (wanted == AotiRuntime::Auto && available.libtorch) {
      return RuntimeChoice{AotiRuntime::LibTorch, "this build has no built-in runtime", imports};
    }
    return usage_error(std::string("the built-in runtime is not in this build (") + PTB_BUILTIN_RUNTIME_STATUS + ")");
  }
  return RuntimeChoice{AotiRuntime::Builtin, "the library needs no LibTorch (compiled with link_libtorch=False)",
                       imports};
}

}  // namespace ptb
