// A GPU target as nvcc's -gencode spells it, the one parser and formatter
// for every place that reads or writes one (kernel images, bundle.json's
// per-target programs and folders, merge, the program choice at run time):
//   sm_90      a cubin for SM 9.0 (runs on 9.x with x >= 0)
//   sm_90a     an architecture-specific cubin (only SM 9.0)
//   sm_100f    a family cubin (the GPUs of the 10.x family)
//   compute_90 PTX for compute 9.0 and later, compiled by the driver
//   compute_90a PTX using 9.0's architecture-specific features (and
//   compute_100f, family PTX)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptb {

// How far a target's code travels (CUDA 12.9+ names): plain sm_90 and
// compute_90, architecture-specific sm_90a (only that exact GPU), family
// sm_100f (the GPUs of that family).
enum class ArchVariant { Plain, ArchSpecific, Family };

struct GpuTarget {
  uint32_t sm = 0;  // major * 10 + minor: 90, 100, 120
  ArchVariant variant = ArchVariant::Plain;
  bool ptx = false;

  std::string name() const;  // "sm_90", "sm_90a", "sm_100f", "compute_90", "compute_90a"
  bool operator==(const GpuTarget&) const = default;
};

// nullopt for anything but the names above (1 to 4 digits, no leading 0).
std::optional<GpuTarget> parse_gpu_target(std::string_view name);
inline bool is_gpu_target_name(std::string_view name) { return parse_gpu_target(name).has_value(); }

}  // namespace ptb
