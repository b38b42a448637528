#include "ptbundle/kernels/gpu_target.h"

#include <algorithm>

namespace ptb {

std::string GpuTarget::name() const {
  std::string out = (ptx ? "compute_" : "sm_") + std::to_string(sm);
  if (variant == ArchVariant::ArchSpecific) out += 'a';
  if (variant == ArchVariant::Family) out += 'f';
  return out;
}

std::optional<GpuTarget> parse_gpu_target(std::string_view name) {
  GpuTarget target;
  if (name.starts_with("sm_")) {
    name.remove_prefix(3);
  } else if (name.starts_with("compute_")) {
    name.remove_prefix(8);
    target.ptx = true;
  } else {
    return std::nullopt;
  }
  if (!name.empty() && name.back() == 'a') {
    target.variant = ArchVariant::ArchSpecific;
    name.remove_suffix(1);
  } else if (!name.empty() && name.back() == 'f') {
    target.variant = ArchVariant::Family;
    name.remove_suffix(1);
  }
  if (name.empty() || name.size() > 4 || name.front() == '0' ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  for (char c : name) target.sm = target.sm * 10 + static_cast<uint32_t>(c - '0');
  return target;
}

}  // namespace ptb
