#include <algorithm>
#include <tuple>

#include "prepared_part.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/kernels/triton_templates.h"

namespace ptb::detail {

Result<PartKernels> scan_part_kernels(const std::vector<Bytes>& libraries, const std::vector<std::string>& names) {
  PartKernels out;
  std::vector<KernelImage> all;
  for (size_t i = 0; i < libraries.size(); ++i) {
    PTB_TRY(auto images, scan_kernels(libraries[i], names[i]));
    for (auto& image : images) {
      out.targets.push_back({image.target(), image.sm, kernel_kind_name(image.kind)});
      all.push_back(std::move(image));
    }
  }
  auto key = [](const KernelTarget& t) { return std::tie(t.sm, t.kind, t.target); };
  std::sort(out.targets.begin(), out.targets.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  out.targets.erase(std::unique(out.targets.begin(), out.targets.end(),
                                [&](const auto& a, const auto& b) { return key(a) == key(b); }),
                    out.targets.end());
  out.template_note = triton_template_note(find_triton_templates(all));
  return out;
}

}  // namespace ptb::detail
