// Which of a part's per-target programs (merged bundles of single-blob CUDA
// parts keep one per GPU target) to load on a GPU. Each program is a file of
// its own, so ptbundle picks, not ExecuTorch: the same preference as
// choose_variant (the exact SM first), then what the driver would still load
// (a cubin of the same major and a lower minor, or PTX for a lower compute).
#include <string>

#include "ptbundle/kernels/compat.h"
#include "ptbundle/kernels/gpu_target.h"

namespace ptb {
namespace {

std::string target_list(const std::vector<std::string>& targets) {
  std::string out;
  for (const auto& target : targets) out += (out.empty() ? "" : ", ") + target;
  return out.empty() ? "none" : out;
}

}  // namespace

TargetProgramChoice choose_target_program(const std::vector<std::string>& targets, GpuCapability gpu) {
  TargetProgramChoice choice;
  const uint32_t sm = gpu.sm();
  std::optional<size_t> same_major, ptx;
  uint32_t same_major_sm = 0, ptx_sm = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    auto target = parse_gpu_target(targets[i]);
    if (!target) continue;
    if (!target->ptx && target->sm == sm) {
      choice.index = i;
      choice.message = "the " + targets[i] + " program, native for " + gpu.name();
      return choice;
    }
    if (!target->ptx && target->variant == ArchVariant::Plain && target->sm / 10 == gpu.major && target->sm < sm &&
        (!same_major || target->sm > same_major_sm)) {
      same_major = i;
      same_major_sm = target->sm;
    }
    if (target->ptx && target->variant == ArchVariant::Plain && target->sm <= sm && (!ptx || target->sm > ptx_sm)) {
      ptx = i;
      ptx_sm = target->sm;
    }
  }
  if (same_major) {
    choice.index = same_major;
    choice.message = "the " + targets[*same_major] + " program: no " + gpu.name() + " one, and an " +
                     targets[*same_major] + " cubin runs on " + gpu.name();
  } else if (ptx) {
    choice.index = ptx;
    choice.message = "the " + targets[*ptx] + " program: no cubin program for " + gpu.name() +
                     ", and the driver compiles its PTX at load time";
  } else {
    choice.message = "no program for " + gpu.name() + ": the part has programs for " + target_list(targets) +
                     "; merge in a bundle exported for " + gpu.name() + " or one with PTX for compute_" +
                     std::to_string(sm) + " or lower";
  }
  return choice;
}

}  // namespace ptb
