#include "ptbundle/kernels/aoti_shims.h"

#include <algorithm>
#include <array>
#include <map>

namespace ptb {
namespace {

#define PTB_SHIM(name, family, library, fix) \
  AotiShim{#name, ShimFamily::family, ShimLibrary::library, ShimFix::fix},
constexpr AotiShim kShims[] = {
#include "ptbundle/kernels/aoti_shim_table.inc"
};
#undef PTB_SHIM

constexpr bool sorted_and_unique() {
  for (size_t i = 1; i < std::size(kShims); ++i)
    if (!(kShims[i - 1].name < kShims[i].name)) return false;
  return true;
}
static_assert(sorted_and_unique(), "aoti_shim_table.inc must be sorted by name, each name once");

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

std::span<const AotiShim> builtin_runtime_shims() { return kShims; }

const AotiShim* find_builtin_shim(std::string_view name) {
  auto found = std::lower_bound(std::begin(kShims), std::end(kShims), name,
                                [](const AotiShim& shim, std::string_view key) { return shim.name < key; });
  return found != std::end(kShims) && found->name == name ? &*found : nullptr;
}

const char* shim_family_name(ShimFamily family) {
  switch (family) {
    case ShimFamily::Numbering: return "numbering";
    case ShimFamily::Runtime: return "runtime";
    case ShimFamily::Tensor: return "tensor";
    case ShimFamily::Device: return "device";
    case ShimFamily::Gemm: return "GEMM";
    case ShimFamily::Convolution: return "convolution";
    case ShimFamily::Attention: return "attention";
    case ShimFamily::Sort: return "sort";
    case ShimFamily::Index: return "index";
    case ShimFamily::Random: return "random";
    case ShimFamily::Quantized: return "quantized";
    case ShimFamily::Scalar: return "scalar";
  }
  return "?";
}

const char* shim_library_name(ShimLibrary library) {
  switch (library) {
    case ShimLibrary::None: return "";
    case ShimLibrary::Cublas: return "cuBLAS";
    case ShimLibrary::Cudnn: return "cuDNN";
  }
  return "?";
}

const char* shim_library_file(ShimLibrary library) {
  switch (library) {
    case ShimLibrary::None: return "";
    case ShimLibrary::Cublas: return "libcublasLt.so.13";
    case ShimLibrary::Cudnn: return "libcudnn.so.9";
  }
  return "?";
}

std::string shim_fix_text(ShimFix fix) {
  switch (fix) {
    case ShimFix::None: return "";
    case ShimFix::TritonGemm:
      return "compile the part with max_autotune and Triton-only GEMM backends "
             "(max_autotune_gemm_backends=\"TRITON\"), as ExecuTorch's CUDA backend does";
    case ShimFix::TritonConv:
      return "compile the part with max_autotune and Triton-only convolution backends "
             "(max_autotune_conv_backends=\"TRITON\"), as ExecuTorch's CUDA backend does";
    case ShimFix::TritonSdpa:
      return "export with ExecuTorch's Triton SDPA (its CUDA backend replaces SDPA with a Triton kernel)";
  }
  return "";
}

ShimFamily guess_shim_family(std::string_view name) {
  if (const AotiShim* known = find_builtin_shim(name)) return known->family;
  if (contains(name, "attention")) return ShimFamily::Attention;
  if (contains(name, "conv")) return ShimFamily::Convolution;
  for (std::string_view gemm : {"mm_out", "_mm", "addmm", "bmm", "_addmv", "linear"})
    if (contains(name, gemm)) return contains(name, "int4") || contains(name, "int8") || contains(name, "_scaled_mm")
                                        ? ShimFamily::Quantized
                                        : ShimFamily::Gemm;
  if (contains(name, "sort") || contains(name, "topk") || contains(name, "kthvalue")) return ShimFamily::Sort;
  if (contains(name, "rand") || contains(name, "normal") || contains(name, "bernoulli") || contains(name, "uniform"))
    return ShimFamily::Random;
  if (contains(name, "index") || contains(name, "scatter") || contains(name, "gather") || contains(name, "nonzero") ||
      contains(name, "masked"))
    return ShimFamily::Index;
  if (contains(name, "item") || contains(name, "scalar_to_tensor")) return ShimFamily::Scalar;
  return ShimFamily::Tensor;
}

std::string missing_shim_fix(std::string_view name) {
  if (name == "aoti_torch_proxy_executor_call_function") {
    return "the library calls custom operators through a proxy executor; build ptbundle with LibTorch";
  }
  switch (guess_shim_family(name)) {
    case ShimFamily::Attention: return shim_fix_text(ShimFix::TritonSdpa) + ", or build ptbundle with LibTorch";
    case ShimFamily::Gemm: return shim_fix_text(ShimFix::TritonGemm) + ", or build ptbundle with LibTorch";
    case ShimFamily::Convolution: return shim_fix_text(ShimFix::TritonConv) + ", or build ptbundle with LibTorch";
    default: return "an ATen operator the library falls back to; export without it or build ptbundle with LibTorch";
  }
}

std::vector<std::string> missing_builtin_shims(const std::vector<std::string>& imports) {
  std::vector<std::string> missing;
  for (const std::string& name : imports) {
    if (name.rfind("aoti_", 0) != 0) continue;
    if (!find_builtin_shim(name)) missing.push_back(name);
  }
  return missing;
}

std::string missing_shims_message(const std::string& origin, const std::vector<std::string>& missing) {
  std::map<std::string, std::vector<std::string>> by_fix;
  for (const std::string& name : missing) by_fix[missing_shim_fix(name)].push_back(name);
  std::string text = origin + ": the built-in AOTInductor runtime lacks " + std::to_string(missing.size()) +
                     (missing.size() == 1 ? " function" : " functions") + " the library imports:";
  bool first = true;
  for (const auto& [fix, names] : by_fix) {
    std::string listed;
    for (const auto& name : names) listed += (listed.empty() ? "" : ", ") + name;
    text += std::string(first ? " " : "; ") + listed + " (fix: " + fix + ")";
    first = false;
  }
  return text;
}

std::vector<ShimLibraryNeed> shim_libraries_needed(const std::vector<std::string>& imports) {
  std::vector<ShimLibraryNeed> needs;
  for (ShimLibrary library : {ShimLibrary::Cublas, ShimLibrary::Cudnn}) {
    ShimLibraryNeed need{library, {}};
    for (const std::string& name : imports) {
      const AotiShim* shim = find_builtin_shim(name);
      if (shim && shim->library == library) need.shims.push_back(name);
    }
    if (!need.shims.empty()) needs.push_back(std::move(need));
  }
  return needs;
}

}  // namespace ptb
