// Can this device code run on that GPU? The driver's rules for cubins and
// PTX (see compat_rules.cc for the NVIDIA documents they come from), the
// image the driver would pick from a module, and the variant ExecuTorch's
// CUDA backend picks from a multi-variant payload. Every verdict carries a
// sentence for people: what is there, and what would make it run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/base/result.h"

namespace ptb {

// A GPU's compute capability: 9.0 for an H100 or H200.
struct GpuCapability {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t sm() const { return major * 10 + minor; }  // 90, 100, 121
  std::string name() const;                            // "sm_90"
  friend bool operator==(const GpuCapability&, const GpuCapability&) = default;
};

// "sm_86", "sm86", "8.6" or "86" (the last digit is the minor version: "100"
// is 10.0, "121" is 12.1). Suffixed targets such as "sm_90a" name code, not a
// GPU, and are refused, as is anything else, with a usage error.
Result<GpuCapability> parse_capability(std::string_view text);

// The oldest driver (as cuDriverGetVersion reports it: 12080 for CUDA 12.8)
// that can JIT-compile PTX of ISA version major.minor.
uint32_t driver_version_for_ptx(uint32_t major, uint32_t minor);

// "13.0" from 13000.
std::string cuda_version_name(uint32_t driver_version);

struct ImageVerdict {
  bool runs = false;
  bool jit = false;  // PTX the driver would compile at load time
  std::string reason;
};

// One image on `gpu`. `driver_version` 0 means unknown: PTX ISA versions are
// then not checked, and the reason says so.
ImageVerdict judge_image(const KernelImage& image, GpuCapability gpu, uint32_t driver_version);

// A unit the driver loads as a whole and picks one image from: a fatbin
// container, or a bare cubin or PTX module.
struct ModuleVerdict {
  std::string location;
  std::vector<size_t> images;   // indices into the scanned list
  std::optional<size_t> chosen; // the image the driver would use
  bool runs = false;
  // False when every image is a cubin without code (nvlink's cudadevrt
  // module): nothing is launched from it, so the library's verdict skips it.
  bool has_code = true;
};

struct KernelVerdict {
  bool runs = false;
  std::vector<ImageVerdict> images;  // one per scanned image, same order
  std::vector<ModuleVerdict> modules;
  // One line: "runs on sm_90: sm_90a cubin" or "cannot run on sm_80: it has
  // sm_90a cubin, compute_90a PTX; ... export it on an sm_80 GPU, or ...".
  // With no device code at all, runs is true and the message says there was
  // nothing to check.
  std::string message;
};

// Every module of a library (the list scan_kernels returned) that has code
// must have an image that runs. Among the images that run, the driver is taken to prefer a
// cubin to PTX (the compatibility guides: "will automatically use the cubin
// by default, keeping the PTX path strictly for forward-compatibility"), and
// the highest target among them.
KernelVerdict judge_kernels(const std::vector<KernelImage>& images, GpuCapability gpu, uint32_t driver_version);

// A variant of ExecuTorch's multi-variant ("ETCUDAFQN0") payload, reduced to
// what its runtime chooses by.
struct VariantTarget {
  uint32_t target_sm = 0;    // 0: the single variant of an older payload, no target recorded
  uint32_t ptx_compute = 0;  // 0: no PTX
  bool fallback_only = false;
};

struct VariantChoice {
  bool runs = false;
  std::optional<size_t> index;
  bool uses_ptx = false;  // chosen as the PTX fallback
  std::string message;
};

// The variant ExecuTorch's CUDA backend loads on `gpu`
// (CudaWeightCache::select_variant): a sole variant without a target as is;
// else the first regular variant whose target_sm equals the GPU's SM exactly;
// else the first variant with PTX for compute ≤ the GPU's SM that is the
// fallback or the only variant. The message names every variant and, when
// none fits, what would make the payload load there.
VariantChoice choose_variant(const std::vector<VariantTarget>& variants, GpuCapability gpu);

// Parts of a merged bundle that keep one program per GPU target ("sm_90",
// "sm_90a", "compute_75"): the program to load on `gpu`. The exact SM first,
// else the highest cubin target of the GPU's major below its minor, else the
// highest PTX target at or below it. The message says which and why, or, when
// none fits, lists the targets there are.
struct TargetProgramChoice {
  std::optional<size_t> index;
  std::string message;
};
TargetProgramChoice choose_target_program(const std::vector<std::string>& targets, GpuCapability gpu);

}  // namespace ptb
