// Which GPUs a cubin or PTX module runs on. The rules, and where NVIDIA states
// them:
//
// - Cubins: "A cubin generated for a certain compute capability is supported
//   to run on any GPU with the same major revision and same or higher minor
//   revision of compute capability" (CUDA C++ Programming Guide, "Binary
//   Compatibility"; Blackwell Compatibility Guide, 1.2 "Application
//   Compatibility on Blackwell Architecture"; same sentence in the Ada and
//   Hopper guides). sm_80 runs on 8.6, sm_86 not on 8.0, sm_8x not on 9.0.
// - PTX: "PTX is compiled at runtime to cubin ... for any GPU with compute
//   capability higher than or equal to" its target (Programming Guide, "PTX
//   Compatibility"; same Blackwell guide section), provided the driver's JIT
//   knows the PTX ISA version the module declares (PTX ISA, "Release Notes",
//   the PTX-to-CUDA release table: ISA 8.7 came with CUDA 12.8, 9.0 with 13.0).
// - Architecture-specific targets (sm_90a, sm_100a, sm_120a; compute_90a):
//   "code compiled for an architecture-specific target runs only on GPUs of
//   exactly that compute capability", neither forward nor backward, for cubin
//   and PTX alike (Programming Guide, "Feature Set Compiler Targets" /
//   "Architecture-Specific Features"; NVIDIA blog "NVIDIA Blackwell and NVIDIA
//   CUDA 12.9 Introduce Family-Specific Architecture Features").
// - Family-specific targets (sm_100f, sm_103f, sm_120f; CUDA 12.9+): run on
//   the GPUs of the same major version with the same or a higher minor
//   version (sm_100f on 10.0 and 10.3, not 11.0 or 12.0), cubin and PTX
//   (same sections).
#include <charconv>

#include "ptbundle/kernels/compat.h"

namespace ptb {
namespace {

uint32_t major_of(uint32_t sm) { return sm / 10; }
uint32_t minor_of(uint32_t sm) { return sm % 10; }

bool same_major_not_older(uint32_t sm, GpuCapability gpu) {
  return major_of(sm) == gpu.major && minor_of(sm) <= gpu.minor;
}

// The PTX ISA release table, (ISA major, ISA minor, driver version).
struct PtxRelease {
  uint32_t major, minor, driver;
};
constexpr PtxRelease kPtxReleases[] = {
    {6, 0, 9000},   {6, 1, 9010},   {6, 2, 9020},   {6, 3, 10000},  {6, 4, 10010},  {6, 5, 10020},
    {7, 0, 11000},  {7, 1, 11010},  {7, 2, 11020},  {7, 3, 11030},  {7, 4, 11040},  {7, 5, 11050},
    {7, 6, 11060},  {7, 7, 11070},  {7, 8, 11080},  {8, 0, 12000},  {8, 1, 12010},  {8, 2, 12020},
    {8, 3, 12030},  {8, 4, 12040},  {8, 5, 12050},  {8, 6, 12070},  {8, 7, 12080},  {8, 8, 12090},
    {9, 0, 13000},  {9, 1, 13010},
};

std::string gpu_words(GpuCapability gpu) { return gpu.name() + " (" + std::to_string(gpu.major) + "." + std::to_string(gpu.minor) + ")"; }

}  // namespace

std::string GpuCapability::name() const { return "sm_" + std::to_string(sm()); }

Result<GpuCapability> parse_capability(std::string_view text) {
  const std::string original(text);
  const auto refuse = [&](const std::string& why) {
    return usage_error("GPU '" + original + "': " + why + "; expected sm_86, 8.6 or 86");
  };
  if (text.substr(0, 3) == "sm_") text.remove_prefix(3);
  else if (text.substr(0, 2) == "sm") text.remove_prefix(2);
  if (text.empty()) return refuse("no number");
  const size_t dot = text.find('.');
  uint32_t major = 0, minor = 0;
  if (dot != std::string_view::npos) {
    const auto major_text = text.substr(0, dot), minor_text = text.substr(dot + 1);
    const auto a = std::from_chars(major_text.data(), major_text.data() + major_text.size(), major);
    const auto b = std::from_chars(minor_text.data(), minor_text.data() + minor_text.size(), minor);
    if (major_text.empty() || minor_text.size() != 1 || a.ec != std::errc() ||
        a.ptr != major_text.data() + major_text.size() || b.ec != std::errc() ||
        b.ptr != minor_text.data() + minor_text.size())
      return refuse("not a compute capability");
  } else {
    uint32_t number = 0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), number);
    if (parsed.ec != std::errc() || number > 9999) return refuse("not a compute capability");
    if (parsed.ptr != text.data() + text.size()) {
      const char suffix = *parsed.ptr;
      if ((suffix == 'a' || suffix == 'f') && parsed.ptr + 1 == text.data() + text.size())
        return refuse(std::string("the '") + suffix + "' suffix names a compiler target, not a GPU");
      return refuse("not a compute capability");
    }
    major = number / 10;
    minor = number % 10;
  }
  if (major < 1 || major > 99) return refuse("major version " + std::to_string(major) + " is out of range");
  return GpuCapability{major, minor};
}

uint32_t driver_version_for_ptx(uint32_t major, uint32_t minor) {
  for (const PtxRelease& release : kPtxReleases)
    if (release.major == major && release.minor == minor) return release.driver;
  // Newer than the table: since ISA 9.0 each CUDA 13.x release brought ISA
  // 9.x. Older than 6.0 is older than any driver that runs today's GPUs.
  if (major >= 9) return (major + 4) * 1000 + minor * 10;
  return 0;
}

std::string cuda_version_name(uint32_t driver_version) {
  return std::to_string(driver_version / 1000) + "." + std::to_string(driver_version % 1000 / 10);
}

ImageVerdict judge_image(const KernelImage& image, GpuCapability gpu, uint32_t driver_version) {
  ImageVerdict verdict;
  const std::string target = image.target();
  const bool ptx = image.kind == KernelKind::Ptx;
  const std::string what = target + (ptx ? " PTX" : " cubin");
  if (image.sm < 10) {
    verdict.reason = what + ": its target is unknown";
    return verdict;
  }
  switch (image.variant) {
    case ArchVariant::ArchSpecific:
      verdict.runs = image.sm == gpu.sm();
      verdict.reason = what + (verdict.runs ? " matches " : " is architecture-specific: it runs only on sm_" +
                                                                std::to_string(image.sm) + ", not on ") +
                       gpu_words(gpu);
      break;
    case ArchVariant::Family:
      verdict.runs = same_major_not_older(image.sm, gpu);
      verdict.reason = what + (verdict.runs ? " runs within its family on " : " runs only on the sm_" +
                                                                                  std::to_string(major_of(image.sm)) +
                                                                                  "x family from " +
                                                                                  std::to_string(major_of(image.sm)) +
                                                                                  "." + std::to_string(minor_of(image.sm)) +
                                                                                  ", not on ") +
                       gpu_words(gpu);
      break;
    case ArchVariant::Plain:
      if (ptx) {
        verdict.runs = image.sm <= gpu.sm();
        verdict.reason = what + (verdict.runs ? " can be compiled by the driver for " : " needs a GPU of at least " +
                                                                                            std::to_string(major_of(image.sm)) + "." +
                                                                                            std::to_string(minor_of(image.sm)) + ", not ") +
                         gpu_words(gpu);
      } else {
        verdict.runs = same_major_not_older(image.sm, gpu);
        verdict.reason = what + (verdict.runs ? " runs on " : " runs only on " + std::to_string(major_of(image.sm)) +
                                                                  ".x GPUs from " + std::to_string(major_of(image.sm)) + "." +
                                                                  std::to_string(minor_of(image.sm)) + ", not on ") +
                         gpu_words(gpu);
      }
      break;
  }
  if (!ptx || !verdict.runs) return verdict;
  verdict.jit = true;
  if (image.ptx_major == 0) {
    verdict.reason += " (PTX ISA version unknown: not checked against the driver)";
  } else if (driver_version == 0) {
    verdict.reason += " (PTX ISA " + image.ptx_version() + " needs a driver for CUDA " +
                      cuda_version_name(driver_version_for_ptx(image.ptx_major, image.ptx_minor)) +
                      " or newer; driver unknown)";
  } else {
    const uint32_t needed = driver_version_for_ptx(image.ptx_major, image.ptx_minor);
    if (needed > driver_version) {
      verdict.runs = false;
      verdict.reason = what + ": PTX ISA " + image.ptx_version() + " needs a driver for CUDA " +
                       cuda_version_name(needed) + " or newer; this driver supports CUDA " +
                       cuda_version_name(driver_version);
    }
  }
  return verdict;
}

}  // namespace ptb
