// ptb::robot::Model: a part opened checked (checked_open.h), loaded, run.
#include "ptbundle/robot.h"

#include <chrono>

#include "call_checks.h"
#include "checked_open.h"
#include "ptbundle/base/dtype.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/tune.h"
#include "ptbundle/results/timing.h"

namespace ptb::robot {

namespace {

constexpr DType kDTypes[] = {DType::UInt8,   DType::Int8,    DType::Int16,  DType::Int32,  DType::Int64,
                             DType::Float16, DType::Float32, DType::Float64, DType::Bool,  DType::BFloat16,
                             DType::UInt16,  DType::UInt32,  DType::UInt64};

Error empty_model() {
  return usage_error("the Model is empty (it was moved from); open one with ptb::robot::Model::open");
}

const LoadInfo kEmptyInfo{};
const Verification kEmptyVerification{};

}  // namespace

std::optional<DType> dtype_from_number(int32_t number) {
  for (DType dtype : kDTypes)
    if (static_cast<int32_t>(dtype) == number) return dtype;
  return std::nullopt;
}

const char* dtype_name(DType dtype) {
  if (!dtype_from_number(static_cast<int32_t>(dtype))) return "unknown";
  return scalar_type_name(static_cast<int32_t>(dtype));
}

size_t dtype_size(DType dtype) {
  if (!dtype_from_number(static_cast<int32_t>(dtype))) return 0;
  return static_cast<size_t>(scalar_type_size(static_cast<int32_t>(dtype)).value_or(0));
}

std::optional<DType> dtype_from_name(std::string_view name) {
  auto number = scalar_type_from_name(name);
  if (!number) return std::nullopt;
  return dtype_from_number(*number);
}

const char* runtime_name(Runtime runtime) {
  switch (runtime) {
    case Runtime::Auto: return "auto";
    case Runtime::Builtin: return "builtin";
    case Runtime::LibTorch: return "libtorch";
  }
  return "unknown";
}

const char* signature_state_name(SignatureState state) {
  switch (state) {
    case SignatureState::Unsigned: return "unsigned";
    case SignatureState::Unchecked: return "unchecked";
    case SignatureState::Verified: return "verified";
  }
  return "unknown";
}

size_t TensorInfo::bytes() const {
  if (!known) return 0;
  return static_cast<size_t>(tensor_bytes(shape, static_cast<int32_t>(dtype)).value_or(0));
}

Result<std::vector<Gpu>> gpus() {
  GpuReport report = discover_gpus();
  if (report.gpus.empty()) return io_error("no CUDA GPU: " + report.reason);
  std::vector<Gpu> out;
  for (const GpuInfo& gpu : report.gpus)
    out.push_back({gpu.index, gpu.name, static_cast<int>(gpu.capability.sm()), gpu.memory_bytes});
  return out;
}

struct Model::State {
  detail::CheckedPart checked;
  AotiModel model;
  LoadInfo info;
  Verification verification;
  int device = 0;
};

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const LoadInfo& Model::info() const { return state_ ? state_->info : kEmptyInfo; }
const Verification& Model::verification() const { return state_ ? state_->verification : kEmptyVerification; }

GraphInfo Model::graphs() const {
  if (!state_) return {false, false, empty_model().message};
  const GraphState state = state_->model.graph_state();
  return {state.requested, state.active, state.why_not};
}

namespace {

std::optional<AotiRuntime> to_aoti(Runtime runtime) {
  switch (runtime) {
    case Runtime::Auto: return AotiRuntime::Auto;
    case Runtime::Builtin: return AotiRuntime::Builtin;
    case Runtime::LibTorch: return AotiRuntime::LibTorch;
  }
  return std::nullopt;
}

std::vector<TensorInfo> specs_of(const std::optional<std::vector<ValueSpec>>& values, const std::vector<std::string>& names,
                                 size_t count, const char* what) {
  std::vector<TensorInfo> specs(count);
  for (size_t i = 0; i < count; ++i) {
    specs[i].name = i < names.size() && !names[i].empty() ? names[i] : std::string(what) + " " + std::to_string(i);
    if (!values || i >= values->size() || !(*values)[i].tensor) continue;
    const TensorSpec& tensor = *(*values)[i].tensor;
    auto dtype = dtype_from_number(tensor.scalar_type);
    if (!dtype) continue;
    specs[i].known = true;
    specs[i].dtype = *dtype;
    specs[i].shape = tensor.sizes;
  }
  return specs;
}

void tally(const CheckList& checks, Verification& verification) {
  verification.ran = true;
  for (const CheckOutcome& outcome : checks.outcomes()) {
    const std::string line = outcome.check + " " + outcome.subject + ": " + outcome.message;
    if (outcome.status == CheckStatus::Pass) ++verification.passed;
    if (outcome.status == CheckStatus::Skip) {
      ++verification.skipped;
      verification.skips.push_back(line);
    }
    if (outcome.status == CheckStatus::Fail) {
      ++verification.failed;
      verification.failures.push_back(line);
    }
  }
}

HostTensor to_host(const Tensor& tensor) {
  HostTensor host;
  host.scalar_type = static_cast<int8_t>(tensor.dtype);
  for (int64_t size : tensor.shape) host.shape.push_back(static_cast<uint64_t>(size));
  host.data = tensor.data;
  return host;
}

TensorView view_of(const Tensor& tensor) {
  TensorView view;
  view.data = const_cast<uint8_t*>(tensor.data.data());
  view.dtype = tensor.dtype;
  view.shape = tensor.shape;
  view.memory = Memory::Host;
  view.capacity = tensor.data.size();
  return view;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<Model> Model::open(const std::string& bundle, const Options& options) {
  const auto runtime = to_aoti(options.runtime);
  if (!runtime) return usage_error("Options::runtime is not a ptb::robot::Runtime");
  auto state = std::make_unique<State>();
  // Every check that needs no GPU first: one answer for a bad bundle on every machine.
  PTB_TRY(state->checked, detail::open_checked(bundle, options));
  PTB_TRY(CudaDeviceInfo device, cuda_device(options.device));
  PTB_CHECK(detail::prepare_for_gpu(state->checked, options, device));
  const RunPart& part = state->checked.part;
  state->device = options.device;

  // The tune file as the bundle lists it; with verification or keys, the
  // checks above covered it with every other file.
  std::string tune_warning;
  const std::optional<TunedChoices> tuned =
      options.use_tune_file ? tuned_choices_for(bundle, device, tune_warning) : std::nullopt;

  LoadOptions load;
  load.tuned = tuned ? &*tuned : nullptr;
  load.device = options.device;
  load.staged_upload = options.staged_upload;
  load.runtime = *runtime;
  load.cuda_graphs = options.cuda_graphs;
  load.seed = options.seed;
  PTB_TRY(state->model, load_part(part, load));

  detail::CheckedPart& checked = state->checked;
  if (checked.testcase) {
    auto start = std::chrono::steady_clock::now();
    run_testcase("part " + part.name, part.name, state->model, options.device, *checked.testcase, checked.checks);
    state->info.testcase_ms = ms_since(start);
    PTB_CHECK(detail::first_failure(checked.checks, bundle));
  } else if (options.verify && !checked.testcase_skip.empty()) {
    checked.checks.skip(checks::kTestcase, "part " + part.name, "not reproduced: " + checked.testcase_skip);
  }
  if (options.verify || !options.keys.empty() || options.require_signature) tally(checked.checks, state->verification);

  LoadInfo& info = state->info;
  if (tuned) {
    info.tune_file = tuned->source;
    info.tuned_choices = tuned->choices.size();
  }
  info.tune_warning = tune_warning;
  const LoadTimes& times = state->model.load_times();
  info.part = part.name;
  info.source = part.source;
  info.method = part.method;
  info.variant = part.variant;
  info.kernels = part.kernels;
  info.gpu = {device.index, device.name, static_cast<int>(device.capability.sm()), 0};
  if (auto all = gpus(); all.ok()) {
    for (const Gpu& gpu : *all)
      if (gpu.index == device.index) info.gpu.memory_bytes = gpu.memory_bytes;
  }
  info.runtime = state->model.runtime().name;
  info.runtime_reason = state->model.runtime().reason;
  info.weights_layout = weights_layout_name(part.weights.layout);
  info.upload = times.upload_method;
  info.signature = detail::signature_info(checked.signature, checked.checks);
  info.weight_bytes = times.weight_bytes;
  info.check_ms = checked.check_ms;
  info.read_ms = part.read_ms;
  info.library_ms = times.library_ms;
  info.create_ms = times.create_ms;
  info.weights_ms = times.weights_ms;
  LoadTimes all = times;
  all.read_ms = part.read_ms;
  info.total_ms = all.total_ms() + info.check_ms + info.testcase_ms;
  info.inputs = specs_of(part.inputs, state->model.input_names(), state->model.num_inputs(), "input");
  info.outputs = specs_of(part.outputs, state->model.output_names(), state->model.num_outputs(), "output");
  for (const AotiDynamicDim& d : part.input_bounds.dims) {
    if (d.input >= info.inputs.size()) continue;
    info.inputs[d.input].dynamic.push_back({d.dim, d.min.value_or(-1), d.max.value_or(-1)});
  }
  Model model;
  model.state_ = std::move(state);
  return model;
}

Result<std::vector<Tensor>> Model::run(const std::vector<Tensor>& inputs) {
  if (!state_) return empty_model();
  std::vector<TensorView> views;
  for (const Tensor& input : inputs) views.push_back(view_of(input));
  PTB_CHECK(detail::check_inputs(state_->info.inputs, views, state_->device));
  std::vector<HostTensor> host;
  for (const Tensor& input : inputs) host.push_back(to_host(input));
  PTB_TRY(auto outputs, state_->model.run(host));
  std::vector<Tensor> result;
  for (HostTensor& output : outputs) {
    Tensor tensor;
    auto dtype = dtype_from_number(output.scalar_type);
    if (!dtype) return invalid("output " + std::to_string(result.size()) + " has dtype " + std::to_string(output.scalar_type) + ", which ptb::robot::DType does not name");
    tensor.dtype = *dtype;
    for (uint64_t size : output.shape) tensor.shape.push_back(static_cast<int64_t>(size));
    tensor.data = std::move(output.data);
    result.push_back(std::move(tensor));
  }
  return result;
}

Status Model::run(std::span<const TensorView> inputs, std::span<const TensorView> outputs, void* stream) {
  if (!state_) return empty_model();
  PTB_CHECK(check_call(state_->info.inputs, state_->info.outputs, inputs, outputs, state_->device));
  const Memory memory = !inputs.empty() ? inputs[0].memory : Memory::Device;
  if (memory == Memory::Device) {
    std::vector<ptb::DeviceTensor> in, out;
    for (const TensorView& t : inputs) in.push_back({t.data, static_cast<int32_t>(t.dtype), t.shape, t.strides});
    for (const TensorView& t : outputs) out.push_back({t.data, static_cast<int32_t>(t.dtype), t.shape, t.strides});
    return state_->model.run_on_device(in, out, stream);
  }
  if (stream) return usage_error("a stream was given with host memory; a host call is synchronous (pass nullptr)");
  std::vector<HostTensor> host;
  for (const TensorView& t : inputs) {
    HostTensor tensor;
    tensor.scalar_type = static_cast<int8_t>(t.dtype);
    for (int64_t size : t.shape) tensor.shape.push_back(static_cast<uint64_t>(size));
    const size_t bytes = static_cast<size_t>(tensor_bytes(t.shape, static_cast<int32_t>(t.dtype)).value_or(0));
    const uint8_t* data = static_cast<const uint8_t*>(t.data);
    tensor.data.assign(data, data + bytes);
    host.push_back(std::move(tensor));
  }
  PTB_TRY(auto results, state_->model.run(host));
  for (size_t i = 0; i < outputs.size() && i < results.size(); ++i) {
    const TensorView& want = outputs[i];
    std::vector<int64_t> shape(results[i].shape.begin(), results[i].shape.end());
    if (results[i].scalar_type != static_cast<int32_t>(want.dtype) || shape != want.shape) {
      std::string shape_text;
      for (int64_t size : shape) shape_text += (shape_text.empty() ? "" : ", ") + std::to_string(size);
      return invalid("output " + std::to_string(i) + ": the method gave " +
                     scalar_type_name(results[i].scalar_type) + " [" + shape_text + "]; the buffer given is " +
                     dtype_name(want.dtype) + " of another shape");
    }
    std::copy(results[i].data.begin(), results[i].data.end(), static_cast<uint8_t*>(want.data));
  }
  return {};
}

Result<CallTimes> Model::time(const std::vector<Tensor>& inputs, int warmup, int iterations) {
  if (!state_) return empty_model();
  std::vector<HostTensor> host;
  for (const Tensor& input : inputs) host.push_back(to_host(input));
  PTB_TRY(auto times, state_->model.time_calls(host, warmup, iterations));
  const TimingStats stats = summarize_timings(times);
  return CallTimes{stats.count, stats.min_ms, stats.median_ms, stats.p90_ms, stats.p99_ms, stats.max_ms, stats.mean_ms};
}

}  // namespace ptb::robot
