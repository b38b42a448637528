// `ptbundle tune` as a library call (tune.h): the parts run first, with
// nothing of the bundle locked but what reading it takes; then the tune file
// and bundle.json change in one transaction.
#include "ptbundle/cuda/tune.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/bundle/tune_file.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runtime_choice.h"

namespace ptb {
namespace {

// The part's recorded test case, for the method `part` runs.
Result<std::vector<HostTensor>> testcase_inputs(const std::string& bundle_path, const RunPart& part) {
  PTB_TRY(Bundle bundle, Bundle::open(bundle_path));
  PTB_TRY(BundlePart opened, bundle.open_part(part.name));
  if (!opened.entry->testcase || !opened.testcase) {
    return invalid(bundle.dir().display(kManifestFileName) + ": part " + in_quotes(part.name) +
                   " records no test case; give its inputs with --input (as ptbundle run takes them), or export it "
                   "with --example");
  }
  PTB_TRY(PartTestCase test, read_part_testcase(*opened.entry, *opened.testcase, part.method,
                                                *opened.programs.front().program));
  return std::move(test.inputs);
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Runs one part once on the GPU: its first call makes (or takes) the
// choices of every shape it meets.
Result<TunedPart> tune_part(const TuneRequest& request, const std::string& name, const CudaDeviceInfo& device,
                            const TunedChoices* handed, std::string& runtime) {
  RunPartOptions options;
  options.part = name;
  // Checked as verify checks it, through the files then loaded.
  PTB_TRY(RunInput opened, open_run_input(request.bundle, options));
  options.gpu = device.capability;
  options.driver_version = device.driver_version;
  PTB_TRY(RunPart part, choose_run_part(opened, options));
  TunedPart tuned;
  tuned.name = part.name;
  const InputArguments arguments{request.inputs, false, 0};
  std::vector<HostTensor> inputs;
  std::optional<EarlyInputs> early;
  if (request.inputs.empty()) {
    PTB_TRY(inputs, testcase_inputs(request.bundle, part));
    tuned.inputs = "test case";
  } else {
    PTB_TRY(early, bind_before_loading(arguments, part));
    tuned.inputs = join(request.inputs, ", ");
  }
  LoadOptions load;
  load.device = device.index;
  load.tuned = handed;
  PTB_TRY(AotiModel model, load_part(part, load));
  runtime = model.runtime().name;
  if (early && early->bound) {
    for (const BoundInput& input : early->inputs) inputs.push_back(input.tensor);
  } else if (early) {
    PTB_TRY(std::vector<BoundInput> bound, bind_inputs(arguments, part, model.input_names()));
    for (const BoundInput& input : bound) inputs.push_back(input.tensor);
  }
  const auto start = std::chrono::steady_clock::now();
  PTB_TRY(std::vector<HostTensor> outputs, model.run(inputs));
  tuned.first_call_ms = ms_since(start);
  return tuned;
}

}  // namespace

Result<TuneReport> tune_bundle(const TuneRequest& request) {
  // The bundle first: a bad or signed bundle gets the same answer on every
  // machine, with or without a GPU.
  std::vector<std::string> names;
  std::optional<TuneFile> existing;
  std::string source;
  {
    PTB_TRY(Bundle bundle, Bundle::open(request.bundle));
    PTB_CHECK(refuse_signed_for_tune(bundle.dir()));
    if (request.parts.empty()) {
      for (const ManifestPart& part : bundle.manifest().parts) names.push_back(part.name);
    }
    for (const std::string& wanted : request.parts) {
      PTB_TRY(auto part, bundle.find_part(wanted, "--part"));
      if (std::find(names.begin(), names.end(), part->name) == names.end()) names.push_back(part->name);
    }
    if (names.empty()) return invalid(bundle.dir().display(kManifestFileName) + ": lists no part to tune");
    if (const auto& listed = bundle.manifest().tune) {
      source = bundle.dir().display(listed->path);
      auto read = read_tune_file(bundle.dir(), *listed);
      if (read.ok()) existing = std::move(*read);
      else if (!request.retune) return invalid(read.error().message + "; ptbundle tune --retune writes it anew");
    }
    if (source.empty()) source = bundle.dir().display(kTuneFileName);
  }
  if (!request.inputs.empty() && names.size() != 1) {
    return usage_error("--input gives the inputs of one part; name it with --part");
  }
  if (!kRunnerBuilt) return usage_error(runner_unavailable_reason());
  PTB_TRY(CudaDeviceInfo device, cuda_device(request.device));

  TuneGpu update;
  update.name = device.name;
  update.sm = device.capability.name();
  TunedChoices handed;
  handed.source = source;
  if (existing && !request.retune) {
    for (const TuneGpu& gpu : existing->gpus) {
      if (!gpu.same_gpu(update)) continue;
      for (const TuneChoice& c : gpu.choices) handed.choices.push_back({c.shim, c.key, c.choice, c.library, false});
    }
  }

  TuneReport report;
  report.bundle = request.bundle;
  report.device = device;
  report.retune = request.retune;
  for (const std::string& name : names) {
    auto part = tune_part(request, name, device, &handed, report.runtime);
    if (!part.ok()) return with_context("part " + name, part.take_error());
    report.parts.push_back(std::move(*part));
  }
  for (const TunedChoice& c : runtime_choices(device.index)) {
    update.choices.push_back({c.shim, c.key, c.choice, c.library_version});
    ++(c.searched ? report.searched : report.recorded);
  }
  update.runtime = report.runtime;
  update.tuned = utc_now_iso8601();
  TuneFile file = existing.value_or(TuneFile{});
  add_tuned(file, std::move(update));
  for (const TuneGpu& gpu : file.gpus)
    if (gpu.name == device.name && gpu.sm == device.capability.name()) report.choices = gpu.choices.size();
  report.total = file.choice_count();
  if (report.total > kMaxTuneChoices) {
    return invalid(source + ": would hold " + std::to_string(report.total) + " choices; a tune file holds at most " +
                   std::to_string(kMaxTuneChoices) + " (ptbundle tune --retune on each GPU starts it anew)");
  }
  PTB_TRY(report.file, write_bundle_tune_file(request.bundle, file, request.tool_version));
  return report;
}

std::optional<TunedChoices> tuned_choices_for(const std::string& bundle, const CudaDeviceInfo& device,
                                              std::string& warning) {
  auto opened = Bundle::open(bundle);
  if (!opened.ok()) return std::nullopt;  // not a bundle folder: nothing tuned
  const std::optional<ManifestTuneFile>& listed = opened->manifest().tune;
  if (!listed) return std::nullopt;
  auto file = read_tune_file(opened->dir(), *listed);
  if (!file.ok()) {
    warning = file.error().message + "; ignored: every shape is searched at its first call (ptbundle tune --retune "
                                     "writes the file anew)";
    return std::nullopt;
  }
  for (const TuneGpu& gpu : file->gpus) {
    if (gpu.name != device.name || gpu.sm != device.capability.name()) continue;
    TunedChoices choices;
    choices.source = opened->dir().display(listed->path);
    for (const TuneChoice& c : gpu.choices) choices.choices.push_back({c.shim, c.key, c.choice, c.library, false});
    return choices;
  }
  return std::nullopt;
}

std::string choices_digest(const std::vector<TunedChoice>& choices) {
  std::vector<std::tuple<std::string, std::string, std::string, uint64_t>> sorted;
  for (const TunedChoice& c : choices) sorted.emplace_back(c.shim, c.key, c.choice, c.library_version);
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (const auto& [shim, key, choice, library] : sorted) {
    text += shim + "\t" + key + "\t" + choice + "\t" + std::to_string(library) + "\n";
  }
  return to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
}

}  // namespace ptb
