// `ptbundle run` as a library call: input binding, one run, outputs written
// and compared, timing (run.h says in which order and why).
#include "ptbundle/cuda/run.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/cuda/tune.h"
#include "ptbundle/formats/npy.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

Result<std::vector<RunCheck>> check_expects(const RunRequest& request, const std::vector<std::string>& output_names,
                                            const std::vector<HostTensor>& outputs) {
  std::vector<NpyFile> files;  // the expected values point into their mappings
  std::vector<ExpectedOutput> expected;
  std::vector<std::string> paths;
  size_t next = 0;
  for (const std::string& text : request.expects) {
    NamedFile item = split_named(text);
    PTB_TRY(size_t index, resolve_named(item, output_names, next, "output", "--expect"));
    PTB_TRY(NpyFile file, NpyFile::open(item.file));
    const NpyHeader& header = file.header();
    // The rule verify applies to a test case export recorded (tolerance.h),
    // so that both judge the same outputs alike.
    Tolerance tolerance = output_tolerance({header.scalar_type, header.shape, file.data()});
    if (request.atol) tolerance.atol = *request.atol;
    if (request.rtol) tolerance.rtol = *request.rtol;
    if (request.atol || request.rtol) tolerance.rule = "--atol/--rtol, over " + tolerance.rule;
    expected.push_back({index, output_names[index], {header.scalar_type, header.shape, file.data()}, tolerance, true});
    paths.push_back(item.file);
    files.push_back(std::move(file));
  }
  std::vector<OutputComparison> comparisons = compare_outputs(outputs, expected);
  std::vector<RunCheck> checks;
  for (size_t i = 0; i < comparisons.size(); ++i) checks.push_back({paths[i], std::move(comparisons[i])});
  return checks;
}

RunTensor tensor_record(size_t index, const std::string& name, const HostTensor& tensor, std::string file) {
  return {index, name, tensor.scalar_type, tensor.shape, std::move(file)};
}

}  // namespace

TensorBytes tensor_bytes(const HostTensor& tensor) {
  return {tensor.scalar_type, tensor.shape, Bytes(tensor.data.data(), tensor.data.size())};
}

bool RunReport::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const RunCheck& c) { return c.comparison.passed(); });
}

std::vector<OutputComparison> compare_outputs(const std::vector<HostTensor>& outputs,
                                              const std::vector<ExpectedOutput>& expected) {
  std::vector<OutputComparison> comparisons;
  for (const ExpectedOutput& want : expected) {
    OutputComparison comparison;
    comparison.name = want.name;
    comparison.tolerance = want.tolerance;
    if (want.index >= outputs.size()) {
      comparison.problem = "the method returned " + std::to_string(outputs.size()) + " output(s)";
    } else if (!want.compare_values) {
      check_unvalued_output(tensor_bytes(outputs[want.index]), want.tensor.scalar_type, want.tensor.shape, comparison);
    } else {
      auto stats = compare_tensors(tensor_bytes(outputs[want.index]), want.tensor, want.tolerance);
      if (stats.ok()) comparison.stats = *stats;
      else comparison.problem = stats.error().message;
    }
    comparisons.push_back(std::move(comparison));
  }
  return comparisons;
}

namespace {

// A library this build has no runtime for (one linked to LibTorch in a build
// without LibTorch, one importing a shim the built-in runtime lacks) is
// known from its bytes: refused by name before any GPU is looked for or
// anything loaded, when no program of the part could run.
Status check_some_runtime(const RunInput& input, AotiRuntime wanted) {
  std::optional<Error> first;
  for (const RunCandidate& candidate : input.candidates) {
    std::vector<std::pair<Bytes, std::string>> libraries;
    if (candidate.variants) {
      for (size_t i = 0; i < candidate.libraries.size(); ++i)
        libraries.push_back({candidate.libraries[i], candidate.part.source + ": " + candidate.variants->variants[i].so_key});
    } else {
      libraries.push_back({candidate.part.library, candidate.part.source + ": " + candidate.part.library_key});
    }
    for (const auto& [bytes, origin] : libraries) {
      auto choice = choose_runtime(bytes, origin, wanted);
      if (choice.ok()) return {};
      if (!first) first = choice.take_error();
    }
  }
  if (first) return *first;
  return {};
}

}  // namespace

Result<RunReport> run_part(const RunRequest& request) {
  if (request.warmup < 0 || request.iterations < 0) return usage_error("--warmup and --iterations must be 0 or more");

  // The input first: a bad bundle gets the same answer on every machine and
  // in every build, whether or not it has a GPU or a runtime to run it.
  RunPartOptions options;
  options.part = request.part;
  options.method = request.method;
  PTB_TRY(RunInput opened, open_run_input(request.path, options));
  if (!kRunnerBuilt) return usage_error(runner_unavailable_reason());
  PTB_CHECK(check_some_runtime(opened, request.runtime));
  PTB_TRY(CudaDeviceInfo device, cuda_device(request.device));
  options.gpu = device.capability;
  options.driver_version = device.driver_version;
  PTB_TRY(RunPart part, choose_run_part(opened, options));
  const InputArguments arguments{request.inputs, request.random, request.seed};
  PTB_TRY(auto early, bind_before_loading(arguments, part));

  std::string tune_warning;
  const std::optional<TunedChoices> tuned =
      request.use_tune_file ? tuned_choices_for(request.path, device, tune_warning) : std::nullopt;

  LoadOptions load;
  load.tuned = tuned ? &*tuned : nullptr;
  load.device = request.device;
  load.staged_upload = request.staged_upload;
  load.runtime = request.runtime;
  load.cuda_graphs = request.cuda_graphs;
  load.seed = request.seed;
  PTB_TRY(AotiModel model, load_part(part, load));

  std::vector<BoundInput> inputs;
  if (early.bound) {
    inputs = std::move(early.inputs);
    if (inputs.size() != model.num_inputs()) {
      return invalid(part.source + ": method " + part.method + " takes " + std::to_string(inputs.size()) +
                     " inputs, but its library takes " + std::to_string(model.num_inputs()));
    }
  } else {
    PTB_TRY(inputs, bind_inputs(arguments, part, model.input_names()));
  }
  std::vector<HostTensor> tensors;
  for (const auto& input : inputs) tensors.push_back(input.tensor);
  const auto first = std::chrono::steady_clock::now();
  PTB_TRY(std::vector<HostTensor> outputs, model.run(tensors));
  const double first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first).count();

  RunReport report;
  report.first_call_ms = first_call_ms;
  if (!tune_warning.empty()) report.warnings.push_back(tune_warning);
  if (tuned) {
    report.tuning.file = tuned->source;
    report.tuning.recorded = tuned->choices.size();
  }
  const std::vector<TunedChoice> made = runtime_choices(request.device);
  for (const TunedChoice& c : made) ++(c.searched ? report.tuning.searched : report.tuning.from_file);
  report.tuning.choices_sha256 = choices_digest(made);
  report.part = part.name;
  report.source = part.source;
  report.checked = opened.checked;
  report.method = part.method;
  report.libtorch = libtorch_version();
  report.runtime = model.runtime();
  report.device = device;
  report.variant = part.variant;
  report.kernels = part.kernels;
  report.weights_layout = part.weights.layout;
  report.weights_file = part.weights.file;
  report.load = model.load_times();
  report.load.read_ms = part.read_ms;
  for (size_t i = 0; i < inputs.size(); ++i) {
    report.inputs.push_back(tensor_record(i, model.input_names()[i], inputs[i].tensor, inputs[i].origin));
  }

  if (!request.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(request.output_dir, ec);
    if (ec) return io_error(request.output_dir + ": cannot create the folder: " + ec.message());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor& t = outputs[i];
    std::string path;
    if (!request.output_dir.empty()) {
      path = (fs::path(request.output_dir) / (part.name + ".out" + std::to_string(i) + ".npy")).string();
      PTB_CHECK(write_npy(path, t.scalar_type, t.shape, Bytes(t.data.data(), t.data.size())));
    }
    report.outputs.push_back(tensor_record(i, model.output_names()[i], t, path));
  }

  if (!request.expects.empty()) {
    PTB_TRY(report.checks, check_expects(request, model.output_names(), outputs));
    std::vector<OutputComparison> comparisons;
    for (const RunCheck& check : report.checks) comparisons.push_back(check.comparison);
    report.verdict = test_case_verdict(part.name, comparisons);
  }

  report.warmup = request.warmup;
  if (request.iterations > 0) {
    std::vector<double> next;
    for (int i = 0; i < kNextCalls; ++i) {
      const auto start = std::chrono::steady_clock::now();
      PTB_TRY(std::vector<HostTensor> again, model.run(tensors));
      next.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(next.begin(), next.end());
    report.next_call_ms = next[next.size() / 2];
    PTB_TRY(std::vector<double> times, model.time_calls(tensors, request.warmup, request.iterations));
    report.timing = summarize_timings(times);
    report.graphs = model.graph_state();
    if (auto warning = stability_warning(*report.timing)) report.warnings.push_back(*warning);
  }
  return report;
}

}  // namespace ptb
