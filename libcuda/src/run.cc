// `ptbundle run` as a library call: input binding, one run, outputs written
// and compared, timing (run.h says in which order and why).
#include "ptbundle/cuda/run.h"

#include <algorithm>
#include <filesystem>

#include "ptbundle/cuda/gpu.h"
#include "ptbundle/formats/npy.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

// "NAME=FILE" or "FILE".
struct NamedFile {
  std::string name;  // empty: the next one in order
  std::string file;
};

NamedFile split_named(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return {"", text};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::optional<size_t> as_index(const std::string& name) {
  if (name.empty() || name.size() > 6 || name.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoul(name);
}

// NAME against indices and names; `next` counts unnamed ones.
Result<size_t> resolve(const NamedFile& item, const std::vector<std::string>& names, size_t& next, const char* what,
                       const std::string& option) {
  size_t index = 0;
  if (item.name.empty()) {
    index = next++;
  } else if (auto number = as_index(item.name)) {
    index = *number;
  } else {
    auto found = std::find(names.begin(), names.end(), item.name);
    if (found == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return usage_error(option + " " + item.name + "=" + item.file + ": no " + what + " named '" + item.name +
                         "'; the library has " + (known.empty() ? "none" : known) + " (or use an index)");
    }
    index = static_cast<size_t>(found - names.begin());
  }
  if (index >= names.size()) {
    return usage_error(option + " " + (item.name.empty() ? item.file : item.name + "=" + item.file) + ": the part has " +
                       std::to_string(names.size()) + " " + what + "s");
  }
  return index;
}

struct BoundInput {
  HostTensor tensor;
  std::string origin;  // the file, or "random"
};

// Inputs in library order; each .npy checked against the signature, when
// there is one, as it is read.
Result<std::vector<BoundInput>> bind_inputs(const RunRequest& request, const RunPart& part,
                                            const std::vector<std::string>& names) {
  const size_t count = names.size();
  if (part.inputs && part.inputs->size() != count) {
    return invalid(part.source + ": method " + part.method + " takes " + std::to_string(part.inputs->size()) +
                   " inputs, but its library takes " + std::to_string(count));
  }
  std::vector<std::optional<BoundInput>> slots(count);
  size_t next = 0;
  for (const std::string& text : request.inputs) {
    NamedFile item = split_named(text);
    PTB_TRY(size_t index, resolve(item, names, next, "input", "--input"));
    if (slots[index]) return usage_error("--input: input " + std::to_string(index) + " is given twice");
    std::optional<ValueSpec> spec;
    if (part.inputs) spec = (*part.inputs)[index];
    PTB_TRY(HostTensor tensor, read_input(item.file, spec, index, part.method));
    slots[index] = BoundInput{std::move(tensor), item.file};
  }
  std::vector<BoundInput> inputs;
  for (size_t i = 0; i < count; ++i) {
    if (!slots[i]) {
      if (!request.random) {
        return usage_error("input " + std::to_string(i) + " (" + names[i] + ") of " + part.method +
                           " is not given: pass --input " + std::to_string(i) + "=FILE.npy, or --random");
      }
      if (!part.inputs) {
        return usage_error(part.source + " records no input signature, so --random cannot make input " +
                           std::to_string(i) + "; pass --input " + std::to_string(i) + "=FILE.npy");
      }
      PTB_TRY(HostTensor tensor, random_input((*part.inputs)[i], i, part.method, request.seed));
      slots[i] = BoundInput{std::move(tensor), "random"};
    }
    inputs.push_back(std::move(*slots[i]));
  }
  return inputs;
}

std::vector<std::string> index_names(size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

// Inputs named by index are bound before loading, against the signature; a
// name other than an index waits for the library's names. A plain struct, not
// std::optional<std::vector>: GCC 12 -O2 reports a false -Wmaybe-uninitialized
// for the latter once it is moved out of a Result.
struct EarlyInputs {
  bool bound = false;
  std::vector<BoundInput> inputs;
};

Result<EarlyInputs> bind_before_loading(const RunRequest& request, const RunPart& part) {
  if (!part.inputs) return EarlyInputs{};
  auto inputs = bind_inputs(request, part, index_names(part.inputs->size()));
  if (inputs.ok()) return EarlyInputs{true, std::move(inputs).value()};
  for (const auto& text : request.inputs) {
    NamedFile item = split_named(text);
    if (!item.name.empty() && !as_index(item.name)) return EarlyInputs{};
  }
  return inputs.error();
}

Result<std::vector<RunCheck>> check_expects(const RunRequest& request, const std::vector<std::string>& output_names,
                                            const std::vector<HostTensor>& outputs) {
  std::vector<NpyFile> files;  // the expected values point into their mappings
  std::vector<ExpectedOutput> expected;
  std::vector<std::string> paths;
  size_t next = 0;
  for (const std::string& text : request.expects) {
    NamedFile item = split_named(text);
    PTB_TRY(size_t index, resolve(item, output_names, next, "output", "--expect"));
    PTB_TRY(NpyFile file, NpyFile::open(item.file));
    const NpyHeader& header = file.header();
    Tolerance tolerance = default_tolerance(header.scalar_type);
    if (request.atol) tolerance.atol = *request.atol;
    if (request.rtol) tolerance.rtol = *request.rtol;
    expected.push_back({index, output_names[index], {header.scalar_type, header.shape, file.data()}, tolerance});
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
    } else {
      auto stats = compare_tensors(outputs[want.index].view(), want.tensor, want.tolerance);
      if (stats.ok()) comparison.stats = *stats;
      else comparison.problem = stats.error().message;
    }
    comparisons.push_back(std::move(comparison));
  }
  return comparisons;
}

Result<RunReport> run_part(const RunRequest& request) {
  if (!kRunnerBuilt) return usage_error(runner_unavailable_reason());
  if (request.warmup < 0 || request.iterations < 0) return usage_error("--warmup and --iterations must be 0 or more");

  PTB_TRY(CudaDeviceInfo device, cuda_device(request.device));
  const GpuReport gpus = discover_gpus();
  RunPartOptions options;
  options.part = request.part;
  options.method = request.method;
  options.gpu = device.capability;
  options.driver_version = gpus.driver_version;
  PTB_TRY(RunPart part, open_run_part(request.path, options));
  PTB_TRY(auto early, bind_before_loading(request, part));

  LoadRequest load;
  load.label = "part " + part.name;
  load.library = part.library;
  load.library_origin = part.source + ": " + part.library_key;
  load.weights = &part.weights;
  load.device = request.device;
  load.library_checks_inputs = !part.inputs;
  load.staged_upload = request.staged_upload;
  load.runtime = request.runtime;
  PTB_TRY(AotiModel model, AotiModel::load(load));

  std::vector<BoundInput> inputs;
  if (early.bound) {
    inputs = std::move(early.inputs);
    if (inputs.size() != model.num_inputs()) {
      return invalid(part.source + ": method " + part.method + " takes " + std::to_string(inputs.size()) +
                     " inputs, but its library takes " + std::to_string(model.num_inputs()));
    }
  } else {
    PTB_TRY(inputs, bind_inputs(request, part, model.input_names()));
  }
  std::vector<HostTensor> tensors;
  for (const auto& input : inputs) tensors.push_back(input.tensor);
  PTB_TRY(std::vector<HostTensor> outputs, model.run(tensors));

  RunReport report;
  report.part = part.name;
  report.source = part.source;
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
    PTB_TRY(std::vector<double> times, model.time_calls(tensors, request.warmup, request.iterations));
    report.timing = summarize_timings(times);
    if (auto warning = stability_warning(*report.timing)) report.warnings.push_back(*warning);
  }
  return report;
}

}  // namespace ptb
