#include <algorithm>
#include <tuple>

#include "prepared_part.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {

Result<std::vector<KernelTarget>> kernel_targets_of(const std::vector<Bytes>& libraries,
                                                    const std::vector<std::string>& names) {
  std::vector<KernelTarget> targets;
  for (size_t i = 0; i < libraries.size(); ++i) {
    PTB_TRY(auto images, scan_kernels(libraries[i], names[i]));
    for (const auto& image : images)
      targets.push_back({image.target(), image.sm, kernel_kind_name(image.kind)});
  }
  auto key = [](const KernelTarget& t) { return std::tie(t.sm, t.kind, t.target); };
  std::sort(targets.begin(), targets.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  targets.erase(std::unique(targets.begin(), targets.end(), [&](const auto& a, const auto& b) { return key(a) == key(b); }),
                targets.end());
  return targets;
}

}  // namespace ptb::detail
