// `ptbundle run BUNDLE [--part P] [--method M] [--input NAME=FILE.npy ...]
// [--random] [--output-dir DIR] [--warmup N] [--iterations N] [--json]`:
// one part on the GPU through the built-in AOTInductor runtime or LibTorch
// (runner.h), with trtexec-style timing.
//
// The order is chosen so that every check that needs no GPU work comes
// first: the part's files, the variant and kernels for this GPU, the inputs
// against the method's signature; only then is the library loaded.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/aoti_runtime.h"
#include "ptbundle/results/timing.h"
#include "ptbundle/results/tolerance.h"

namespace ptb::app {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string bundle;
  std::string part;
  std::string method;
  std::vector<std::string> inputs;   // NAME=FILE or FILE
  std::vector<std::string> expects;  // NAME=FILE
  bool random = false;
  uint64_t seed = 0;
  std::string output_dir;
  int warmup = 10;
  int iterations = 100;
  int device = 0;
  std::optional<double> atol;
  std::optional<double> rtol;
  bool json = false;
  bool pageable_upload = false;
  std::string runtime = "auto";
};

// "NAME=FILE" or "FILE"; NAME is an index or the library's input/output name.
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

// Resolves NAME against indices and names; `next` counts unnamed ones.
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

std::string ms_text(double ms) {
  char text[32];
  if (ms < 1) std::snprintf(text, sizeof text, "%.1f us", ms * 1000);
  else std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

Json shape_json(const std::vector<uint64_t>& shape) {
  Json out = Json::array();
  for (uint64_t d : shape) out.push_back(d);
  return out;
}

struct InputSource {
  HostTensor tensor;
  std::string origin;  // the file, or "random"
};

// Inputs in library order. With a signature the .npy files are checked
// before anything is loaded; names other than indices wait for the library.
Result<std::vector<InputSource>> gather_inputs(const RunArgs& args, const RunPart& part,
                                               const std::vector<std::string>& names) {
  const size_t count = names.size();
  if (part.inputs && part.inputs->size() != count) {
    return invalid(part.source + ": method " + part.method + " takes " + std::to_string(part.inputs->size()) +
                   " inputs, but its library takes " + std::to_string(count));
  }
  std::vector<std::optional<InputSource>> slots(count);
  size_t next = 0;
  for (const std::string& text : args.inputs) {
    NamedFile item = split_named(text);
    PTB_TRY(size_t index, resolve(item, names, next, "input", "--input"));
    if (slots[index]) return usage_error("--input: input " + std::to_string(index) + " is given twice");
    std::optional<ValueSpec> spec;
    if (part.inputs) spec = (*part.inputs)[index];
    PTB_TRY(HostTensor tensor, read_input(item.file, spec, index, part.method));
    slots[index] = InputSource{std::move(tensor), item.file};
  }
  std::vector<InputSource> inputs;
  for (size_t i = 0; i < count; ++i) {
    if (!slots[i]) {
      if (!args.random) {
        return usage_error("input " + std::to_string(i) + " (" + names[i] + ") of " + part.method +
                           " is not given: pass --input " + std::to_string(i) + "=FILE.npy, or --random");
      }
      if (!part.inputs) {
        return usage_error(part.source + " records no input signature, so --random cannot make input " +
                           std::to_string(i) + "; pass --input " + std::to_string(i) + "=FILE.npy");
      }
      PTB_TRY(HostTensor tensor, random_input((*part.inputs)[i], i, part.method, args.seed));
      slots[i] = InputSource{std::move(tensor), "random"};
    }
    inputs.push_back(std::move(*slots[i]));
  }
  return inputs;
}

// The names a signature gives before the library is loaded: indices only.
std::vector<std::string> index_names(size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

struct Report {
  Json json = Json::object();
  std::vector<std::string> lines;
  std::vector<std::string> warnings;
  bool failed = false;
};

int run_part_command(const RunArgs& args) {
  if (!kRunnerBuilt) return report(usage_error(runner_unavailable_reason()));
  if (args.warmup < 0 || args.iterations < 0) return report(usage_error("--warmup and --iterations must be 0 or more"));
  const std::optional<AotiRuntime> runtime = parse_aoti_runtime(args.runtime);
  if (!runtime) return report(usage_error("--runtime " + args.runtime + ": expected auto, builtin or libtorch"));

  auto device = cuda_device(args.device);
  if (!device.ok()) return report(device.error());
  const GpuReport gpus = discover_gpus();

  RunPartOptions options;
  options.part = args.part;
  options.method = args.method;
  options.gpu = device->capability;
  options.driver_version = gpus.driver_version;
  auto part = open_run_part(args.bundle, options);
  if (!part.ok()) return report(part.error());

  // Inputs named by index are checked against the signature before loading.
  std::optional<std::vector<InputSource>> early;
  if (part->inputs) {
    auto inputs = gather_inputs(args, *part, index_names(part->inputs->size()));
    bool names_need_library = false;
    for (const auto& text : args.inputs) {
      NamedFile item = split_named(text);
      if (!item.name.empty() && !as_index(item.name)) names_need_library = true;
    }
    if (!inputs.ok() && !names_need_library) return report(inputs.error());
    if (inputs.ok()) early = std::move(inputs).value();
  }

  LoadRequest request;
  request.label = "part " + part->name;
  request.library = part->library;
  request.library_origin = part->source + ": " + part->library_key;
  request.weights = &part->weights;
  request.device = args.device;
  request.library_checks_inputs = !part->inputs;
  request.staged_upload = !args.pageable_upload;
  request.runtime = *runtime;
  auto model = AotiModel::load(request);
  if (!model.ok()) return report(model.error());
  LoadTimes load = model->load_times();
  load.read_ms = part->read_ms;

  std::vector<InputSource> inputs;
  if (early) {
    inputs = std::move(*early);
    if (inputs.size() != model->num_inputs()) {
      return report(invalid(part->source + ": method " + part->method + " takes " + std::to_string(inputs.size()) +
                            " inputs, but its library takes " + std::to_string(model->num_inputs())));
    }
  } else {
    auto gathered = gather_inputs(args, *part, model->input_names());
    if (!gathered.ok()) return report(gathered.error());
    inputs = std::move(gathered).value();
  }
  std::vector<HostTensor> tensors;
  for (const auto& input : inputs) tensors.push_back(input.tensor);

  auto outputs = model->run(tensors);
  if (!outputs.ok()) return report(outputs.error());

  Report out;
  Json& doc = out.json;
  doc["part"] = part->name;
  doc["source"] = part->source;
  doc["method"] = part->method;
  doc["runtime"] = {{"kind", aoti_runtime_name(model->runtime().kind)},
                    {"name", model->runtime().name},
                    {"reason", model->runtime().reason}};
  doc["device"] = {{"index", device->index}, {"name", device->name}, {"sm", device->capability.name()}};
  doc["variant"] = part->variant;
  doc["kernels"] = part->kernels;
  doc["weights"] = {{"layout", weights_layout_name(part->weights.layout)},
                    {"file", part->weights.file},
                    {"bytes", load.weight_bytes},
                    {"upload", load.upload_method}};
  doc["load_ms"] = {{"read", load.read_ms},
                    {"library", load.library_ms},
                    {"create", load.create_ms},
                    {"weights", load.weights_ms},
                    {"total", load.total_ms()}};
  doc["upload_gb_per_s"] = load.upload_gb_per_second();
  out.lines.push_back("part " + part->name + " (" + part->source + "), method " + part->method + ", on GPU " +
                      std::to_string(device->index) + " " + device->name + " (" + device->capability.name() +
                      ")");
  out.lines.push_back("runtime: " + model->runtime().name + " (" + model->runtime().reason + ")");
  out.lines.push_back("variant: " + part->variant);
  if (!part->kernels.empty()) out.lines.push_back("kernels: " + part->kernels);
  char rate[64] = "";
  if (load.weight_bytes) std::snprintf(rate, sizeof rate, " at %.2f GB/s", load.upload_gb_per_second());
  out.lines.push_back("load: read " + ms_text(load.read_ms) + ", library " + ms_text(load.library_ms) + ", create " +
                      ms_text(load.create_ms) + ", weights " + ms_text(load.weights_ms) + " (" +
                      human_size(load.weight_bytes) + " " + weights_layout_name(part->weights.layout) + rate +
                      "), total " + ms_text(load.total_ms()));
  if (load.weight_bytes) out.lines.push_back("upload: " + load.upload_method);

  Json inputs_json = Json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor& t = inputs[i].tensor;
    inputs_json.push_back({{"index", i},
                           {"name", model->input_names()[i]},
                           {"dtype", scalar_type_name(t.scalar_type)},
                           {"shape", shape_json(t.shape)},
                           {"source", inputs[i].origin}});
    out.lines.push_back("input " + std::to_string(i) + " " + model->input_names()[i] + ": " +
                        tensor_text(t.scalar_type, t.shape) + " from " + inputs[i].origin);
  }
  doc["inputs"] = std::move(inputs_json);

  if (!args.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(args.output_dir, ec);
    if (ec) return report(io_error(args.output_dir + ": cannot create the folder: " + ec.message()));
  }
  Json outputs_json = Json::array();
  for (size_t i = 0; i < outputs->size(); ++i) {
    const HostTensor& t = (*outputs)[i];
    Json entry = {{"index", i},
                  {"name", model->output_names()[i]},
                  {"dtype", scalar_type_name(t.scalar_type)},
                  {"shape", shape_json(t.shape)}};
    std::string line = "output " + std::to_string(i) + " " + model->output_names()[i] + ": " +
                       tensor_text(t.scalar_type, t.shape);
    if (!args.output_dir.empty()) {
      const std::string path = (fs::path(args.output_dir) / (part->name + ".out" + std::to_string(i) + ".npy")).string();
      Status written = write_npy(path, t.scalar_type, t.shape, Bytes(t.data.data(), t.data.size()));
      if (!written.ok()) return report(written.error());
      entry["file"] = path;
      line += " -> " + path;
    }
    outputs_json.push_back(std::move(entry));
    out.lines.push_back(line);
  }
  doc["outputs"] = std::move(outputs_json);

  if (!args.expects.empty()) {
    std::vector<OutputComparison> comparisons;
    Json checks = Json::array();
    size_t next = 0;
    for (const std::string& text : args.expects) {
      NamedFile item = split_named(text);
      auto index = resolve(item, model->output_names(), next, "output", "--expect");
      if (!index.ok()) return report(index.error());
      auto expected = NpyFile::open(item.file);
      if (!expected.ok()) return report(expected.error());
      const NpyHeader& header = expected->header();
      Tolerance tolerance = default_tolerance(header.scalar_type);
      if (args.atol) tolerance.atol = *args.atol;
      if (args.rtol) tolerance.rtol = *args.rtol;
      OutputComparison comparison;
      comparison.name = model->output_names()[*index];
      comparison.tolerance = tolerance;
      auto stats = compare_tensors((*outputs)[*index].view(), {header.scalar_type, header.shape, expected->data()},
                                   tolerance);
      if (stats.ok()) comparison.stats = *stats;
      else comparison.problem = stats.error().message;
      checks.push_back({{"output", comparison.name},
                        {"expected", item.file},
                        {"passed", comparison.passed()},
                        {"atol", tolerance.atol},
                        {"rtol", tolerance.rtol},
                        {"max_abs_error", comparison.stats.max_abs_error},
                        {"mean_abs_error", comparison.stats.mean_abs_error},
                        {"max_rel_error", comparison.stats.max_rel_error},
                        {"mean_rel_error", comparison.stats.mean_rel_error},
                        {"required_atol", comparison.stats.required_atol},
                        {"mismatches", comparison.stats.mismatch_count},
                        {"problem", comparison.problem.empty() ? Json(nullptr) : Json(comparison.problem)}});
      comparisons.push_back(std::move(comparison));
    }
    const std::string verdict = test_case_verdict(part->name, comparisons);
    bool passed = true;
    for (const auto& c : comparisons) passed = passed && c.passed();
    doc["checks"] = std::move(checks);
    doc["verdict"] = verdict;
    out.lines.push_back("check: " + verdict);
    out.failed = !passed;
  }

  if (args.iterations > 0) {
    auto times = model->time_calls(tensors, args.warmup, args.iterations);
    if (!times.ok()) return report(times.error());
    TimingStats stats = summarize_timings(*times);
    auto warning = stability_warning(stats);
    doc["timing"] = {{"warmup", args.warmup},
                     {"iterations", stats.count},
                     {"min_ms", stats.min_ms},
                     {"median_ms", stats.median_ms},
                     {"p90_ms", stats.p90_ms},
                     {"p99_ms", stats.p99_ms},
                     {"max_ms", stats.max_ms},
                     {"mean_ms", stats.mean_ms},
                     {"stddev_ms", stats.stddev_ms},
                     {"coefficient_of_variation", stats.coefficient_of_variation},
                     {"calls_per_second", stats.calls_per_second},
                     {"unstable", warning.has_value()}};
    char calls[48];
    std::snprintf(calls, sizeof calls, "%.0f calls/s", stats.calls_per_second);
    char cv[32];
    std::snprintf(cv, sizeof cv, "%.1f%%", stats.coefficient_of_variation * 100);
    out.lines.push_back("timing: " + std::to_string(stats.count) + " calls after " + std::to_string(args.warmup) +
                        " warm-up (CUDA events): min " + ms_text(stats.min_ms) + ", median " +
                        ms_text(stats.median_ms) + ", p90 " + ms_text(stats.p90_ms) + ", p99 " +
                        ms_text(stats.p99_ms) + ", max " + ms_text(stats.max_ms) + ", mean " +
                        ms_text(stats.mean_ms) + "; " + calls + "; CV " + cv);
    if (warning) out.warnings.push_back(*warning);
  }
  doc["warnings"] = out.warnings;

  if (args.json) {
    print_json(doc);
  } else {
    for (const auto& line : out.lines) std::cout << line << '\n';
  }
  for (const auto& warning : out.warnings) std::fprintf(stderr, "ptbundle: warning: %s\n", warning.c_str());
  if (out.failed) {
    std::fprintf(stderr, "ptbundle: error: %s\n", doc["verdict"].get<std::string>().c_str());
    return static_cast<int>(ErrorKind::Invalid);
  }
  return 0;
}

}  // namespace

Action add_run(CLI::App& root) {
  auto* command = root.add_subcommand(
      "run",
      "Run one part of a bundle (or a .pte with its .ptd, or an AOTInductor .pt2 compiled with\n"
      "ExecuTorch's options) on the GPU, without PyTorch: libraries compiled with\n"
      "link_libtorch=False run on the built-in AOTInductor runtime, others through LibTorch. Inputs\n"
      "come from .npy files checked against the method's signature, or are random; outputs are\n"
      "written as .npy. Then times --iterations calls after --warmup with CUDA events.");
  auto args = std::make_shared<RunArgs>();
  command->add_option("bundle", args->bundle, "Bundle folder, .pte, or .pt2 package")->required();
  command->add_option("--part", args->part, "The part to run (needed when the bundle has several)");
  command->add_option("--method", args->method, "The method to run (default: the only one, else forward)");
  command->add_option("--input", args->inputs,
                      "NAME=FILE.npy (NAME: an index or the library's input name) or FILE.npy for the next input");
  command->add_flag("--random", args->random, "Random values for inputs not given (needs the method's signature)");
  command->add_option("--seed", args->seed, "Seed for --random (default 0)");
  command->add_option("--output-dir", args->output_dir, "Write each output as <part>.out<i>.npy into this folder");
  command->add_option("--expect", args->expects,
                      "NAME=FILE.npy: compare an output with expected values (exit 1 if it differs)");
  command->add_option("--atol", args->atol, "Absolute tolerance for --expect (default by dtype)");
  command->add_option("--rtol", args->rtol, "Relative tolerance for --expect (default by dtype)");
  command->add_option("--warmup", args->warmup, "Untimed calls before timing (default 10)");
  command->add_option("--iterations", args->iterations, "Timed calls (default 100; 0: no timing)");
  command->add_option("--device", args->device, "CUDA device index (default 0)");
  command->add_flag("--pageable-upload", args->pageable_upload,
                    "Upload weights with plain cudaMemcpy instead of pinned staging buffers (to compare)");
  command->add_option("--runtime", args->runtime,
                      "auto (default: built-in unless the library needs LibTorch), builtin or libtorch");
  command->add_flag("--json", args->json, "One JSON document on stdout");
  return [args] { return run_part_command(*args); };
}

}  // namespace ptb::app
