// The runner's entry points in a build without LibTorch: each answers with
// what is missing, so callers (the CLI, tests, benchmarks) compile and link
// the same way in both builds. With LibTorch, src/runner/ defines them.
#include "ptbundle/cuda/runner.h"

#if !defined(PTB_HAVE_LIBTORCH)

namespace ptb {

struct AotiModel::State {};

AotiModel::AotiModel() = default;
AotiModel::AotiModel(AotiModel&&) noexcept = default;
AotiModel& AotiModel::operator=(AotiModel&&) noexcept = default;
AotiModel::~AotiModel() = default;

namespace {
const std::vector<std::string> kNoNames;
const LoadTimes kNoTimes;
}  // namespace

size_t AotiModel::num_inputs() const { return 0; }
size_t AotiModel::num_outputs() const { return 0; }
const std::vector<std::string>& AotiModel::input_names() const { return kNoNames; }
const std::vector<std::string>& AotiModel::output_names() const { return kNoNames; }
const LoadTimes& AotiModel::load_times() const { return kNoTimes; }

Result<AotiModel> AotiModel::load(const LoadRequest&) { return usage_error(runner_unavailable_reason()); }

Result<std::vector<HostTensor>> AotiModel::run(const std::vector<HostTensor>&) {
  return usage_error(runner_unavailable_reason());
}

Result<std::vector<double>> AotiModel::time_calls(const std::vector<HostTensor>&, int, int) {
  return usage_error(runner_unavailable_reason());
}

Result<CudaDeviceInfo> cuda_device(int) { return usage_error(runner_unavailable_reason()); }

Result<double> pinned_upload_gb_per_second(uint64_t, int, int) { return usage_error(runner_unavailable_reason()); }

Status staged_upload(std::span<const HostToDevice>, int, const StagingOptions&) {
  return usage_error(runner_unavailable_reason());
}

}  // namespace ptb

#endif
