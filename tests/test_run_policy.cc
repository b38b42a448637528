// Programs shaped like real policy parts (tests/gpu/policy_models.py:
// ResNet18, an ACT-shaped model, a 1-D conv U-Net step that draws noise, a
// flow loop, a MoE router, masked copies, index_put, scatter, sort, nonzero,
// .item(), int4 weight-only Linear, a dynamic-batch MLP, ...), compiled by
// PyTorch on the GPU (make_packages.py, each way: ExecuTorch's
// options, ATen GEMM/convolution allowed, no autotuning, PyTorch's defaults
// with and without LibTorch), each loaded by the built-in runtime (the
// LibTorch-linked "pytorch" way through the CLI, in a process of its own)
// and run against eager PyTorch's outputs on the same GPU,
// then shipped as a robot team ships it: exported by the CLI into a bundle
// whose test case is those inputs and eager's outputs, and verified, which
// runs the test case on this GPU. Samplers draw their own noise, so their outputs are checked by shape,
// finiteness and statistics against eager's. Each package prints one "[gpu]"
// line: what it checked, its error, its time per call against eager's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu_support.h"
#include "ptbundle/base/dtype.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/results/timing.h"
#include "ptbundle/results/tolerance.h"

using namespace ptb;
using ptb::test::npy_tensor;
using ptb::test::this_gpu;
namespace fs = std::filesystem;

namespace {

struct Moments {
  double mean = 0, std = 0;
  uint64_t count = 0, not_finite = 0;
};

Moments moments(const TensorBytes& t) {
  Moments m;
  const uint64_t size = *scalar_type_size(t.scalar_type);
  m.count = size ? t.data.size() / size : 0;
  double sum = 0, squares = 0;
  for (uint64_t i = 0; i < m.count; ++i) {
    const double v = element_value(t, i);
    if (!std::isfinite(v)) {
      ++m.not_finite;
      continue;
    }
    sum += v;
    squares += v * v;
  }
  if (m.count) {
    m.mean = sum / static_cast<double>(m.count);
    m.std = std::sqrt(std::max(0.0, squares / static_cast<double>(m.count) - m.mean * m.mean));
  }
  return m;
}

// "" when a sampler's output is plausible next to eager's: same dtype and
// shape, finite, and (with enough elements) close mean and spread.
std::string sampler_verdict(const TensorBytes& got, const TensorBytes& want) {
  if (got.scalar_type != want.scalar_type || got.shape != want.shape) return "dtype or shape differs from eager's";
  const Moments g = moments(got), w = moments(want);
  if (g.not_finite) return std::to_string(g.not_finite) + " elements not finite";
  if (g.count < 1000) return "";
  char text[200];
  std::snprintf(text, sizeof text, "mean %.4g std %.4g, eager mean %.4g std %.4g", g.mean, g.std, w.mean, w.std);
  const bool close = std::fabs(g.mean - w.mean) <= 0.1 * std::max(1.0, w.std) &&
                     (w.std == 0 ? g.std == 0 : g.std / w.std > 0.8 && g.std / w.std < 1.25);
  return close ? "" : text;
}

struct Outcome {
  bool ok = false;
  std::string what;  // the figures, or why it failed
};

// make_packages.py's arrays: <stem>.in<i>.npy and <stem>.out<i>.npy.
fs::path array_path(const fs::path& folder, const std::string& stem, const char* kind, size_t i) {
  return folder / (stem + "." + kind + std::to_string(i) + ".npy");
}

std::vector<HostTensor> read_inputs(const fs::path& folder, const std::string& stem, size_t count) {
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < count; ++i) inputs.push_back(npy_tensor(array_path(folder, stem, "in", i)));
  return inputs;
}

// One set of inputs against eager's outputs; "" or why not.
std::string check_outputs(AotiModel& model, const fs::path& folder, const std::string& stem, size_t inputs,
                          size_t outputs, bool sampler, double& max_error) {
  auto got = model.run(read_inputs(folder, stem, inputs));
  if (!got.ok()) return "run: " + got.error().message;
  if (got->size() != outputs) return "gave " + std::to_string(got->size()) + " outputs; eager " + std::to_string(outputs);
  for (size_t i = 0; i < outputs; ++i) {
    const TensorBytes mine = tensor_bytes((*got)[i]);
    const HostTensor expected = npy_tensor(array_path(folder, stem, "out", i));
    const TensorBytes want = tensor_bytes(expected);
    if (sampler) {
      std::string why = sampler_verdict(mine, want);
      if (!why.empty()) return "output " + std::to_string(i) + ": " + why;
      continue;
    }
    // The rule export records and verify applies (tolerance.h), so that
    // this check accepts what the product accepts and no more.
    const Tolerance tolerance = output_tolerance(want);
    auto stats = compare_tensors(mine, want, tolerance);
    if (!stats.ok()) return "output " + std::to_string(i) + ": " + stats.error().message;
    max_error = std::max(max_error, stats->max_abs_error);
    if (!stats->passed()) return test_case_verdict(stem, {{"output " + std::to_string(i), tolerance, *stats, ""}});
  }
  return "";
}

// The package exported into a bundle of its own (the recorded inputs and
// eager's outputs as its test case; a sampler's outputs unchecked) and
// verified on this GPU: "" or why not.
// `give_outputs`: the example names eager's outputs (for a sampler, one
// draw, which fixes only dtypes and shapes); else inputs only.
std::string export_and_verify(const fs::path& folder, const std::string& stem, size_t inputs, size_t outputs,
                              bool give_outputs) {
  std::string example = "model=";
  for (size_t i = 0; i < inputs; ++i) example += (i ? "," : "") + array_path(folder, stem, "in", i).string();
  example += ":";
  for (size_t i = 0; i < outputs && give_outputs; ++i)
    example += (i ? "," : "") + array_path(folder, stem, "out", i).string();
  ptb::test::TempDir dir;
  const std::string bundle = ptb::test::quote(dir.path() / "bundle");
  auto exported = ptb::test::run_cli("export -o " + bundle + " --part model=" +
                                     ptb::test::quote(folder / (stem + ".pt2")) + " --example " +
                                     ptb::test::quote(example));
  if (exported.exit_code != 0) return "export: " + exported.err;
  auto verified = ptb::test::run_cli("verify " + bundle + " --json");
  const nlohmann::json report = nlohmann::json::parse(verified.out, nullptr, false);
  if (report.is_discarded()) return "verify printed no JSON: " + verified.err;
  int test_cases = 0;
  for (const nlohmann::json& check : report["checks"]) {
    if (check.value("status", "") == "fail") return "verify: " + check.dump();
    if (check.value("check", "") == "testcase" && check.value("status", "") == "pass") ++test_cases;
  }
  if (verified.exit_code != 0) return "verify exited " + std::to_string(verified.exit_code) + ": " + verified.err;
  if (test_cases != 1) return "verify reproduced " + std::to_string(test_cases) + " test cases; expected 1";
  return "";
}

// A package compiled with PyTorch's defaults (the "pytorch" way,
// link_libtorch=True) needs the LibTorch runtime, which this process cannot
// load once the built-in runtime serves it (runner.h): the CLI runs it, in
// a process of its own. Where this build has LibTorch, export and verify
// (which reproduces the test case with eager's outputs on this GPU); where
// it has not, `run` must refuse it by name before loading it.
Outcome run_libtorch_package(const fs::path& folder, const std::string& stem, const nlohmann::json& description) {
  const size_t inputs = description.value("inputs", 1), outputs = description.value("outputs", 1);
  if (kLibTorchRunnerBuilt) {
    if (std::string shipped = export_and_verify(folder, stem, inputs, outputs, true); !shipped.empty())
      return {false, "linked to LibTorch: exported and verified: " + shipped};
    return {true, "linked to LibTorch: exported, verified on the LibTorch runtime (test case reproduced)"};
  }
  std::string args = "run " + ptb::test::quote(folder / (stem + ".pt2")) + " --iterations 0";
  for (size_t i = 0; i < inputs; ++i) args += " --input " + ptb::test::quote(array_path(folder, stem, "in", i));
  auto ran = ptb::test::run_cli(args);
  if (ran.exit_code == 0) return {false, "linked to LibTorch, yet run succeeded in a build without LibTorch"};
  if (ran.err.find("linked to LibTorch") == std::string::npos)
    return {false, "linked to LibTorch: run failed without naming it: " + ran.err};
  return {true, "linked to LibTorch, refused by name in this build without LibTorch (as expected)"};
}

Outcome run_package(const fs::path& folder, const std::string& stem, const nlohmann::json& description) {
  if (stem.ends_with("-pytorch")) return run_libtorch_package(folder, stem, description);
  Outcome outcome;
  auto part = open_run_part((folder / (stem + ".pt2")).string(), this_gpu());
  if (!part.ok()) return {false, "open: " + part.error().message};
  LoadOptions options;
  options.runtime = AotiRuntime::Builtin;
  auto model = load_part(*part, options);
  if (!model.ok()) return {false, "load: " + model.error().message};
  const size_t inputs = description.value("inputs", 1), outputs = description.value("outputs", 1);
  const bool sampler = description.value("check", "") == "sampler";
  double max_error = 0;
  std::string why = check_outputs(*model, folder, stem, inputs, outputs, sampler, max_error);
  for (const auto& size : description.value("batch_sizes", nlohmann::json::array())) {
    if (!why.empty()) break;
    why = check_outputs(*model, folder, stem + ".b" + std::to_string(size.get<int64_t>()), inputs, outputs, sampler,
                        max_error);
    if (!why.empty()) why = "batch " + std::to_string(size.get<int64_t>()) + ": " + why;
  }
  if (!why.empty()) return {false, why};
  auto times = model->time_calls(read_inputs(folder, stem, inputs), 10, 50);
  if (!times.ok()) return {false, "timing: " + times.error().message};
  const double median_us = summarize_timings(*times).median_ms * 1000;
  const double eager_us = description.value("eager_us", 0.0);
  char text[400];
  if (std::string shipped = export_and_verify(folder, stem, inputs, outputs, true); !shipped.empty()) {
    return {false, std::string(sampler ? "exported with eager's draw as outputs" : "exported") + " and verified: " +
                       shipped};
  }
  // A sampler's example may also give inputs only, where the wrapper source
  // says every output's dtype and shape; where it cannot (an output computed
  // in a buffer an ATen fallback returned), export must say to give outputs.
  std::string ways = "exported, verified";
  if (sampler) {
    std::string inputs_only = export_and_verify(folder, stem, inputs, outputs, false);
    if (!inputs_only.empty() && inputs_only.find("give the outputs after ':'") == std::string::npos)
      return {false, "exported with inputs only and verified: " + inputs_only};
    ways = inputs_only.empty() ? "exported (with a draw, and with inputs only), verified"
                               : "exported with a draw (inputs only: the wrapper does not say every output's shape), verified";
  }
  std::snprintf(text, sizeof text,
                "%s, max abs diff %.3g; %s (test case reproduced); median %.1f us, eager %.1f us (eager/ptbundle %.2f)",
                sampler ? "sampler statistics ok" : "matches eager", max_error, ways.c_str(), median_us, eager_us,
                median_us > 0 ? eager_us / median_us : 0.0);
  return {true, text};
}

// Runs `run` on each package in `folder` whose stem `wanted` takes and
// that compiled (its .json says ok; make_packages says why not), in name
// order, printing and checking each outcome; returns (ran, compiled).
template <class Wanted, class Run>
std::pair<size_t, size_t> run_each_package(const fs::path& folder, Wanted wanted, Run run) {
  std::vector<fs::path> descriptions;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().extension() == ".json" && wanted(entry.path().stem().string())) descriptions.push_back(entry.path());
  std::sort(descriptions.begin(), descriptions.end());
  size_t ran = 0, compiled = 0;
  for (const fs::path& path : descriptions) {
    std::ifstream in(path);
    const nlohmann::json description = nlohmann::json::parse(in, nullptr, false);
    if (description.is_discarded() || !description.value("ok", false)) continue;
    ++compiled;
    const std::string stem = path.stem().string();
    const Outcome outcome = run(stem, description);
    std::printf("[gpu] policy %-22s %s: %s\n", stem.c_str(), outcome.ok ? "ok  " : "FAIL", outcome.what.c_str());
    std::fflush(stdout);
    const std::string verdict = stem + ": " + outcome.what;
    CHECK_MESSAGE(outcome.ok, verdict);
    ran += outcome.ok;
  }
  return {ran, compiled};
}

}  // namespace

TEST_CASE("run on GPU, built-in runtime: programs shaped like policy parts run, match eager PyTorch, export and verify") {
  PTB_REQUIRE_BUILTIN_GPU();
  PTB_REQUIRE_CLI_BUILTIN_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  const fs::path folder = *ptb::test::gpu_packages();
  // The policy set's packages are <model>-<way>.
  const auto [ran, compiled] = run_each_package(folder, [](const std::string& stem) {
    return stem.find('-') != std::string::npos;
  }, [&](const std::string& stem, const nlohmann::json& description) {
    std::fprintf(stderr, "[step] %s\n", stem.c_str());
    return run_package(folder, stem, description);
  });
  std::printf("[gpu] policy parts: %zu of %zu compiled packages ran, matched eager, exported and verified\n", ran,
              compiled);
  CHECK(compiled > 0);
}

// The LibTorch half of the ways-by-programs table: in a build with the
// LibTorch runtime, the packages compiled with PyTorch's defaults (linked to
// LibTorch) export and verify through the CLI, which reproduces their test
// case (eager's outputs) on this GPU. The test above runs the rest, in the
// build without LibTorch, where these are refused by name.
TEST_CASE("run on GPU, LibTorch runtime: packages compiled with PyTorch's defaults export and verify") {
  PTB_REQUIRE_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  const fs::path folder = *ptb::test::gpu_packages();
  const auto [ran, compiled] = run_each_package(folder, [](const std::string& stem) {
    return stem.ends_with("-pytorch");
  }, [&](const std::string& stem, const nlohmann::json& description) {
    return run_libtorch_package(folder, stem, description);
  });
  if (compiled == 0) {
    ptb::test::skip("no <model>-pytorch package in PTB_GPU_PACKAGES (tests/gpu/make_packages.py resnet18-pytorch)");
    return;
  }
  std::printf("[gpu] policy parts on LibTorch: %zu of %zu packages exported and verified\n", ran, compiled);
}
