// Which GPU `verify` judges against, and the order the checks run in.
#include "ptbundle/cuda/gpu_check.h"

#include <algorithm>

namespace ptb {

Result<GpusToCheck> resolve_gpus_to_check(std::string_view option, const std::string& driver_library) {
  GpusToCheck target;
  if (option == "none") {
    target.mode = GpuMode::None;
    target.description = "none (--gpu none)";
    target.skip_reason = "--gpu none: not checked against a GPU";
    target.local_reason = "--gpu none";
    return target;
  }
  std::optional<GpuCapability> given;
  if (option != "auto" && !option.empty()) {
    PTB_TRY(given, parse_capability(option));
  }
  // Test cases run only here, so the GPUs of this machine matter with --gpu sm_XY too.
  GpuReport local = discover_gpus(driver_library);
  target.local_gpus = local.gpus;
  target.local_reason = local.reason;
  if (given) {
    target.mode = GpuMode::Given;
    target.capabilities = {*given};
    target.description = given->name() + " (--gpu)";
    return target;
  }
  target.mode = GpuMode::Auto;
  if (local.gpus.empty()) {
    target.description = "none found";
    target.skip_reason = "no CUDA GPU: " + local.reason;
    return target;
  }
  target.driver_version = local.driver_version;
  for (const GpuInfo& gpu : local.gpus) {
    if (std::find(target.capabilities.begin(), target.capabilities.end(), gpu.capability) == target.capabilities.end())
      target.capabilities.push_back(gpu.capability);
    target.description += (target.description.empty() ? "" : ", ") + gpu.name + " (" + gpu.capability.name() + ")";
  }
  target.description += ", driver " + cuda_version_name(local.driver_version);
  return target;
}

Result<VerifyReport> verify_paths(const std::vector<std::string>& arguments, const VerifyOptions& options) {
  VerifyReport report;
  report.paths = arguments;
  PTB_TRY(report.gpu, resolve_gpus_to_check(options.gpu, options.driver_library));
  for (const std::string& argument : arguments) {
    report.checks.begin_path(argument);
    IntegrityOptions integrity;
    integrity.keys = options.keys;
    integrity.require_signature = options.require_signature;
    integrity.progress = options.progress;
    integrity.written = options.written;
    SignatureSummary signature;
    std::vector<VerifySubject> subjects = check_integrity(argument, report.checks, integrity, &signature);
    signature.path = argument;
    report.signatures.push_back(std::move(signature));
    for (size_t i = 0; i < subjects.size();) {
      if (!subjects[i].target) {
        std::vector<GpuCapability> runs_on = check_gpu(subjects[i], report.gpu, report.checks);
        check_testcases(subjects[i], report.gpu, runs_on, report.checks);
        ++i;
        continue;
      }
      // A part's per-target programs come one after another; the part is judged as a whole.
      std::vector<const VerifySubject*> programs;
      for (; i < subjects.size() && subjects[i].target && subjects[i].part_name == subjects[i - programs.size()].part_name; ++i)
        programs.push_back(&subjects[i]);
      std::vector<std::vector<GpuCapability>> runs_on = check_gpu_per_target(programs, report.gpu, report.checks);
      for (size_t p = 0; p < programs.size(); ++p) {
        if (!runs_on[p].empty()) check_testcases(*programs[p], report.gpu, runs_on[p], report.checks);
      }
    }
  }
  return report;
}

const char* gpu_mode_name(GpuMode mode) {
  switch (mode) {
    case GpuMode::Given: return "given";
    case GpuMode::None: return "none";
    case GpuMode::Auto: return "auto";
  }
  return "auto";
}

CheckTally VerifyReport::tally() const {
  CheckTally tally;
  for (const CheckOutcome& outcome : checks.outcomes()) tally.add(outcome.status);
  return tally;
}

CheckTally VerifyReport::tally(std::string_view path) const {
  CheckTally tally;
  for (const CheckOutcome& outcome : checks.outcomes()) {
    if (outcome.path == path) tally.add(outcome.status);
  }
  return tally;
}

const SignatureSummary* VerifyReport::signature(std::string_view path) const {
  for (const SignatureSummary& summary : signatures) {
    if (summary.path == path && summary.file) return &summary;
  }
  return nullptr;
}

}  // namespace ptb
