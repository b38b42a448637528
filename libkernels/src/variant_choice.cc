// The variant ExecuTorch's CUDA backend loads from a multi-variant payload,
// as CudaWeightCache::select_variant in backends/cuda/runtime/
// cuda_weight_cache.cpp chooses it: by the GPU's SM number alone. It takes a
// regular variant only on exact equality, so an sm_80 variant is not used on
// an sm_86 GPU although its cubin would run there; the message says so.
#include "ptbundle/kernels/compat.h"

namespace ptb {
namespace {

std::string describe(const VariantTarget& variant) {
  std::string text = variant.target_sm == 0 ? std::string("no recorded target") : "sm_" + std::to_string(variant.target_sm);
  if (variant.ptx_compute != 0) text += " + compute_" + std::to_string(variant.ptx_compute) + " PTX";
  if (variant.fallback_only) text += " (fallback)";
  return text;
}

std::string list(const std::vector<VariantTarget>& variants) {
  std::string text;
  for (const VariantTarget& variant : variants) text += (text.empty() ? "" : ", ") + describe(variant);
  return text;
}

}  // namespace

VariantChoice choose_variant(const std::vector<VariantTarget>& variants, GpuCapability gpu) {
  VariantChoice choice;
  const uint32_t sm = gpu.sm();
  if (variants.empty()) {
    choice.message = "the payload lists no library variant";
    return choice;
  }
  if (variants.size() == 1 && variants[0].target_sm == 0) {
    choice.runs = true;
    choice.index = 0;
    choice.message = "one library with no recorded target: ExecuTorch loads it on any GPU, so its kernels decide";
    return choice;
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    if (!variants[i].fallback_only && variants[i].target_sm == sm) {
      choice.runs = true;
      choice.index = i;
      choice.message = "ExecuTorch loads variant " + std::to_string(i) + " (" + describe(variants[i]) +
                       "), native for " + gpu.name();
      return choice;
    }
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    const VariantTarget& variant = variants[i];
    if (variant.ptx_compute != 0 && variant.ptx_compute <= sm && (variant.fallback_only || variants.size() == 1)) {
      choice.runs = true;
      choice.index = i;
      choice.uses_ptx = true;
      choice.message = "ExecuTorch loads variant " + std::to_string(i) + " (" + describe(variant) +
                       ") as the PTX fallback on " + gpu.name() + ": the driver compiles it at load time";
      return choice;
    }
  }
  choice.message = "no variant for " + gpu.name() + ": the payload has " + list(variants) +
                   "; ExecuTorch takes a variant only for exactly " + gpu.name() +
                   " or a PTX fallback for compute_" + std::to_string(sm) + " or lower";
  for (const VariantTarget& variant : variants) {
    if (!variant.fallback_only && variant.target_sm / 10 == gpu.major && variant.target_sm < sm) {
      choice.message += " (the sm_" + std::to_string(variant.target_sm) + " cubin could run on " + gpu.name() +
                        ", but ExecuTorch does not pick it)";
      break;
    }
  }
  choice.message += "; to run there, export on an " + gpu.name() + " GPU and merge that export in, or merge in a "
                    "PTX fallback exported for compute_" + std::to_string(sm) + " or lower";
  return choice;
}

}  // namespace ptb
