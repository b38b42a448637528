// AotiModel: the part's library checked (runtime_choice.h), then loaded by
// the runtime module that can serve it (runtime_modules.h).
#include <memory>

#include "ptbundle/base/sha256.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "runtime_modules.h"

namespace ptb {

struct AotiModel::State {
  std::unique_ptr<detail::ModelBackend> backend;
  RuntimeUse runtime;
};

AotiModel::AotiModel() = default;
AotiModel::AotiModel(AotiModel&&) noexcept = default;
AotiModel& AotiModel::operator=(AotiModel&&) noexcept = default;
AotiModel::~AotiModel() = default;

size_t AotiModel::num_inputs() const { return state_->backend->input_names().size(); }
size_t AotiModel::num_outputs() const { return state_->backend->output_names().size(); }
const std::vector<std::string>& AotiModel::input_names() const { return state_->backend->input_names(); }
const std::vector<std::string>& AotiModel::output_names() const { return state_->backend->output_names(); }
const LoadTimes& AotiModel::load_times() const { return state_->backend->load_times(); }
const RuntimeUse& AotiModel::runtime() const { return state_->runtime; }
GraphState AotiModel::graph_state() const { return state_->backend->graph_state(); }

Result<AotiModel> AotiModel::load(LoadRequest request) {
  if (!kRunnerBuilt) return usage_error(runner_unavailable_reason());
  PTB_TRY(RuntimeChoice choice, choose_runtime(request.library, request.library_origin, request.runtime));
  // A process already served by LibTorch runs link_libtorch=False libraries
  // through it, when the runtime was not asked for by name.
  if (choice.kind == AotiRuntime::Builtin && request.runtime == AotiRuntime::Auto &&
      detail::process_runtime() == AotiRuntime::LibTorch) {
    choice = {AotiRuntime::LibTorch, "LibTorch already serves this process", choice.imports};
  }
  auto module = detail::runtime_module(choice.kind);
  if (!module.ok()) return with_context(request.label, module.take_error());
  request.library_sha256 = to_hex(sha256(request.library));
  request.imports = std::move(choice.imports);
  if (request.tuned && (*module)->use_tuned) (*module)->use_tuned(request.device, *request.tuned);
  PTB_TRY(auto backend, (*module)->load(request));
  AotiModel model;
  model.state_ = std::make_unique<State>();
  model.state_->backend = std::move(backend);
  model.state_->runtime = {choice.kind, (*module)->describe(), choice.reason};
  return model;
}

Result<std::vector<HostTensor>> AotiModel::run(const std::vector<HostTensor>& inputs) {
  return state_->backend->run(inputs);
}

Result<std::vector<double>> AotiModel::time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations) {
  return state_->backend->time_calls(inputs, warmup, iterations);
}

Status AotiModel::run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                                void* stream) {
  return state_->backend->run_on_device(inputs, outputs, stream);
}

std::optional<AotiRuntime> process_aoti_runtime() { return detail::process_runtime(); }

std::vector<TunedChoice> runtime_choices(int device) {
  const std::optional<AotiRuntime> serving = detail::process_runtime();
  if (!serving) return {};
  auto module = detail::runtime_module(*serving);
  if (!module.ok() || !(*module)->choices_made) return {};
  return (*module)->choices_made(device);
}

const char* weights_layout_name(WeightsLayout layout) {
  switch (layout) {
    case WeightsLayout::Blob: return "blob";
    case WeightsLayout::PerFqn: return "per_fqn";
    default: return "none";
  }
}

double LoadTimes::upload_gb_per_second() const {
  if (weight_bytes == 0 || weights_ms <= 0) return 0;
  return static_cast<double>(weight_bytes) / (weights_ms / 1000.0) / 1e9;
}

Result<double> pinned_upload_gb_per_second(uint64_t bytes, int device, int repeats) {
  // The runtime that serves the process measures, or else the built-in one.
  AotiRuntime kind = detail::process_runtime().value_or(kBuiltinRuntimeBuilt ? AotiRuntime::Builtin
                                                                              : AotiRuntime::LibTorch);
  PTB_TRY(const detail::RuntimeModule* module, detail::runtime_module(kind));
  return module->pinned_upload_gb_per_second(bytes, device, repeats);
}

}  // namespace ptb
