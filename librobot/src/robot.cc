#include "ptbundle/robot.h"

#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/results/timing.h"

namespace ptb::robot {

struct Model::State {
  RunPart part;
  AotiModel model;
  LoadInfo info;
  Verification verification;
};

Model::Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const LoadInfo& Model::info() const { return state_->info; }
const Verification& Model::verification() const { return state_->verification; }

GraphInfo Model::graphs() const {
  const GraphState state = state_->model.graph_state();
  return {state.requested, state.active, state.why_not};
}

namespace {

Verification verify_bundle(const std::string& bundle) {
  Verification result;
  auto report = verify_paths({bundle}, VerifyOptions{});
  result.ran = true;
  if (!report.ok()) {
    result.failed = 1;
    result.failures.push_back(report.error().message);
    return result;
  }
  for (const CheckOutcome& outcome : report->checks.outcomes()) {
    if (outcome.status == CheckStatus::Pass) ++result.passed;
    if (outcome.status == CheckStatus::Skip) ++result.skipped;
    if (outcome.status == CheckStatus::Fail) {
      ++result.failed;
      result.failures.push_back(outcome.check + " " + outcome.subject + ": " + outcome.message);
    }
  }
  return result;
}

HostTensor to_host(const Tensor& tensor) {
  HostTensor host;
  host.scalar_type = static_cast<int8_t>(tensor.dtype);
  for (int64_t size : tensor.shape) host.shape.push_back(static_cast<uint64_t>(size));
  host.data = tensor.data;
  return host;
}

}  // namespace

Result<Model> Model::open(const std::string& bundle, const Options& options) {
  auto state = std::make_unique<State>();
  if (options.verify) {
    state->verification = verify_bundle(bundle);
    if (state->verification.failed > 0) {
      return invalid(bundle + ": verification failed (" + std::to_string(state->verification.failed) +
                     " checks): " + state->verification.failures.front());
    }
  }
  const auto runtime = parse_aoti_runtime(options.runtime);
  if (!runtime) return usage_error("runtime '" + options.runtime + "'; expected auto, builtin or libtorch");
  // The input before the GPU, as run does: one answer for a bad bundle on every machine.
  RunPartOptions part_options;
  part_options.part = options.part;
  part_options.method = options.method;
  PTB_TRY(RunInput input, open_run_input(bundle, part_options));
  PTB_TRY(CudaDeviceInfo device, cuda_device(options.device));
  part_options.gpu = device.capability;
  part_options.driver_version = device.driver_version;
  PTB_TRY(state->part, choose_run_part(input, part_options));

  LoadOptions load;
  load.device = options.device;
  load.staged_upload = options.staged_upload;
  load.runtime = *runtime;
  load.cuda_graphs = options.cuda_graphs;
  load.seed = options.seed;
  PTB_TRY(state->model, load_part(state->part, load));

  LoadInfo& info = state->info;
  const LoadTimes& times = state->model.load_times();
  info.part = state->part.name;
  info.source = state->part.source;
  info.method = state->part.method;
  info.variant = state->part.variant;
  info.kernels = state->part.kernels;
  info.gpu = device.name + " (" + device.capability.name() + ")";
  info.runtime = state->model.runtime().name;
  info.runtime_reason = state->model.runtime().reason;
  info.weights_layout = weights_layout_name(state->part.weights.layout);
  info.upload = times.upload_method;
  info.weight_bytes = times.weight_bytes;
  info.read_ms = state->part.read_ms;
  info.library_ms = times.library_ms;
  info.create_ms = times.create_ms;
  info.weights_ms = times.weights_ms;
  LoadTimes all = times;
  all.read_ms = state->part.read_ms;
  info.total_ms = all.total_ms();
  info.input_names = state->model.input_names();
  info.output_names = state->model.output_names();
  info.inputs.resize(info.input_names.size());
  if (state->part.inputs) {
    for (size_t i = 0; i < info.inputs.size() && i < state->part.inputs->size(); ++i) {
      const auto& tensor = (*state->part.inputs)[i].tensor;
      if (!tensor) continue;
      info.inputs[i] = {true, tensor->scalar_type, tensor->sizes, {}};
    }
  }
  for (const AotiDynamicDim& d : state->part.input_bounds.dims) {
    if (d.input >= info.inputs.size()) continue;
    info.inputs[d.input].dynamic.push_back({d.dim, d.min.value_or(-1), d.max.value_or(-1)});
  }
  Model model;
  model.state_ = std::move(state);
  return model;
}

Result<std::vector<Tensor>> Model::run(const std::vector<Tensor>& inputs) {
  std::vector<HostTensor> host;
  for (const Tensor& input : inputs) host.push_back(to_host(input));
  PTB_TRY(auto outputs, state_->model.run(host));
  std::vector<Tensor> result;
  for (HostTensor& output : outputs) {
    Tensor tensor;
    tensor.dtype = output.scalar_type;
    for (uint64_t size : output.shape) tensor.shape.push_back(static_cast<int64_t>(size));
    tensor.data = std::move(output.data);
    result.push_back(std::move(tensor));
  }
  return result;
}

Status Model::run(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs, void* stream) {
  auto convert = [](std::span<const DeviceTensor> from) {
    std::vector<ptb::DeviceTensor> to;
    for (const DeviceTensor& t : from) to.push_back({t.data, t.dtype, t.sizes, t.strides});
    return to;
  };
  const auto in = convert(inputs);
  const auto out = convert(outputs);
  return state_->model.run_on_device(in, out, stream);
}

Result<CallTimes> Model::time(const std::vector<Tensor>& inputs, int warmup, int iterations) {
  std::vector<HostTensor> host;
  for (const Tensor& input : inputs) host.push_back(to_host(input));
  PTB_TRY(auto times, state_->model.time_calls(host, warmup, iterations));
  const TimingStats stats = summarize_timings(times);
  return CallTimes{stats.count, stats.min_ms, stats.median_ms, stats.p90_ms, stats.p99_ms, stats.max_ms, stats.mean_ms};
}

}  // namespace ptb::robot
