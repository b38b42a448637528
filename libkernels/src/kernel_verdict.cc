// A library's verdict on one GPU: its images grouped into the modules the
// driver loads (one per fatbin container or bare image), the image the driver
// would pick from each, and one sentence that says what would make it run.
#include <algorithm>
#include <map>
#include <set>

#include "ptbundle/kernels/compat.h"

namespace ptb {
namespace {

std::string module_key(const KernelImage& image) {
  if (image.container == KernelContainer::Fatbin) return "fatbin@" + std::to_string(image.container_offset);
  return "image@" + std::to_string(image.offset);
}

std::string module_location(const KernelImage& image) {
  if (image.container != KernelContainer::Fatbin) return image.location;
  const size_t entry = image.location.rfind(", entry ");
  return entry == std::string::npos ? image.location : image.location.substr(0, entry);
}

// Higher is preferred: any cubin over any PTX, then the higher target, then
// the more specific variant (an exact 'a' build is tuned for this GPU).
std::tuple<int, uint32_t, int> preference(const KernelImage& image) {
  const int variant = image.variant == ArchVariant::ArchSpecific ? 2 : image.variant == ArchVariant::Family ? 1 : 0;
  return {image.kind == KernelKind::Cubin ? 1 : 0, image.sm, variant};
}

std::string targets_present(const std::vector<KernelImage>& images) {
  std::set<std::string> cubins, ptx;
  for (const KernelImage& image : images) (image.kind == KernelKind::Cubin ? cubins : ptx).insert(image.target());
  std::string text;
  const auto add = [&](const std::set<std::string>& names, const char* kind) {
    if (names.empty()) return;
    if (!text.empty()) text += ", ";
    std::string joined;
    for (const std::string& name : names) joined += (joined.empty() ? "" : " ") + name;
    text += joined + " " + kind;
  };
  add(cubins, "cubin");
  add(ptx, "PTX");
  return text;
}

std::string remedy(GpuCapability gpu) {
  return "to run on " + gpu.name() + ", export it on an " + gpu.name() +
         " GPU (or compile with -gencode arch=compute_" + std::to_string(gpu.sm()) + ",code=sm_" +
         std::to_string(gpu.sm()) + "), or export it with PTX for compute_" + std::to_string(gpu.sm()) +
         " or lower without the 'a' suffix (AOTInductor: emit_multi_arch_kernel=True on such a target)";
}

}  // namespace

KernelVerdict judge_kernels(const std::vector<KernelImage>& images, GpuCapability gpu, uint32_t driver_version) {
  KernelVerdict verdict;
  if (images.empty()) {
    verdict.runs = true;
    verdict.message = "no CUDA device code found: nothing to check on " + gpu.name();
    return verdict;
  }
  std::map<std::string, size_t> module_index;
  for (size_t i = 0; i < images.size(); ++i) {
    verdict.images.push_back(judge_image(images[i], gpu, driver_version));
    const std::string key = module_key(images[i]);
    auto [it, added] = module_index.emplace(key, verdict.modules.size());
    if (added) verdict.modules.push_back({module_location(images[i]), {}, std::nullopt, false});
    verdict.modules[it->second].images.push_back(i);
  }
  size_t failing = 0, with_code = 0;
  std::string first_failure;
  std::set<std::string> chosen_targets;
  for (ModuleVerdict& module : verdict.modules) {
    for (size_t i : module.images) {
      if (!verdict.images[i].runs) continue;
      if (!module.chosen || preference(images[i]) > preference(images[*module.chosen])) module.chosen = i;
    }
    module.runs = module.chosen.has_value();
    module.has_code = std::any_of(module.images.begin(), module.images.end(),
                                  [&](size_t i) { return images[i].code_sections != 0; });
    if (!module.has_code) continue;
    ++with_code;
    if (module.runs) {
      const KernelImage& chosen = images[*module.chosen];
      chosen_targets.insert(chosen.target() + (chosen.kind == KernelKind::Ptx ? " PTX (compiled by the driver)" : " cubin"));
      continue;
    }
    if (failing++ == 0) {
      first_failure = module.location + ": ";
      for (size_t n = 0; n < module.images.size(); ++n)
        first_failure += (n ? "; " : "") + verdict.images[module.images[n]].reason;
    }
  }
  verdict.runs = failing == 0;
  if (verdict.runs) {
    std::string used;
    for (const std::string& target : chosen_targets) used += (used.empty() ? "" : ", ") + target;
    if (with_code == 0) {
      verdict.message = "no CUDA kernels (only modules without code): nothing to check on " + gpu.name();
      return verdict;
    }
    verdict.message = "runs on " + gpu.name() + ": " + std::to_string(with_code) +
                      (with_code == 1 ? " module" : " modules") + " using " + used;
    return verdict;
  }
  verdict.message = "cannot run on " + gpu.name() + ": it has " + targets_present(images) + "; " +
                    std::to_string(failing) + " of " + std::to_string(with_code) +
                    (with_code == 1 ? " module has" : " modules have") + " no image for it (" +
                    first_failure + "); " + remedy(gpu);
  return verdict;
}

}  // namespace ptb
