// What `ptbundle run` does, as one call: open a part (run_part.h), bind its
// inputs, load it on the GPU, run it once, write and compare its outputs,
// then time it. The CLI only parses options into a RunRequest and prints the
// RunReport.
//
// The order puts every check that needs no GPU work first: the input is
// opened and checked (run_part.h's open_run_input: a bundle's part as verify
// checks it, through the files then loaded) before this build's
// runtime or the machine's GPU is asked about, so a bad input gets one
// answer everywhere; then the variant and kernels for this GPU, inputs named
// by index against the method's signature; only then is the library loaded.
// Inputs named by the library's own names wait for the library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/results/timing.h"
#include "ptbundle/results/tolerance.h"

namespace ptb {

struct RunRequest {
  std::string path;    // bundle folder, .pte or .pt2
  std::string part;    // bundle folders with several parts
  std::string method;  // default: the only method, else "forward"
  // "NAME=FILE.npy" or "FILE.npy" (the next one in order); NAME is an index
  // or the library's input (output) name.
  std::vector<std::string> inputs;
  std::vector<std::string> expects;
  bool random = false;  // random values for inputs not given
  uint64_t seed = 0;
  std::string output_dir;  // write each output as <part>.out<i>.npy; empty: none
  int warmup = 10;
  int iterations = 100;  // 0: no timing
  int device = 0;
  std::optional<double> atol;  // for expects; default by dtype
  std::optional<double> rtol;
  bool staged_upload = true;  // false: --pageable-upload
  AotiRuntime runtime = AotiRuntime::Auto;  // --runtime
  bool cuda_graphs = false;                 // --cuda-graph
  // A bundle's tune file (tune.h) hands its choices for this GPU to the
  // runtime; false (--no-tune): every shape is searched at its first call.
  bool use_tune_file = true;
};

// What the runtime chose at the first call, and where from (tune.h).
struct RunTuning {
  std::string file;          // the tune file whose choices were handed over; empty: none
  uint64_t recorded = 0;     // choices the file holds for this GPU
  uint64_t from_file = 0;    // choices taken from it
  uint64_t searched = 0;     // choices found by a search in this run
  std::string choices_sha256;  // choices_digest of every choice: equal in two runs, equal choices
  template <class F>
  void fields(F& f) const {
    f("file", file.empty() ? std::optional<std::string>() : file)("recorded", recorded)("from_file", from_file)(
        "searched", searched)("choices_sha256", choices_sha256);
  }
};

// An input or output as it went in or came out.
struct RunTensor {
  size_t index = 0;
  std::string name;  // the library's name for it
  int8_t scalar_type = 0;
  std::vector<uint64_t> shape;
  std::string file;  // inputs: the .npy or "random"; outputs: where it was written, or empty
};

// One --expect: what was compared with what.
struct RunCheck {
  std::string expected_file;
  OutputComparison comparison;
};

// How many calls after the first, made as the first was (host inputs),
// give RunReport::next_call_ms.
inline constexpr int kNextCalls = 5;

struct RunReport {
  std::string part;
  std::string source;
  PartChecks checked;  // what was checked before the part was loaded (run_part.h)
  std::string method;
  std::string libtorch;  // the version this build's LibTorch runtime has; empty without one
  RuntimeUse runtime;    // which runtime loaded the library, and why
  GraphState graphs;     // whether calls replayed a CUDA graph
  CudaDeviceInfo device;
  std::string variant;
  std::string kernels;
  WeightsLayout weights_layout = WeightsLayout::None;
  std::string weights_file;
  LoadTimes load;
  std::vector<RunTensor> inputs;
  std::vector<RunTensor> outputs;
  // The first call (inputs copied in, outputs copied back: the call that
  // searches), and the median of the next calls made the same way.
  double first_call_ms = 0;
  std::optional<double> next_call_ms;  // with timing: the median of kNextCalls calls
  RunTuning tuning;
  std::vector<RunCheck> checks;        // one per expect, in the order given
  std::optional<std::string> verdict;  // when there were expects
  std::optional<TimingStats> timing;   // when iterations > 0
  int warmup = 0;
  std::vector<std::string> warnings;  // for stderr: unstable timings
  // False when an expected output differs; the report is still whole.
  bool passed() const;

  // Views of the parts, for fields().
  struct DeviceView {
    CudaDeviceInfo device;
    template <class F>
    void fields(F& f) const {
      f("index", device.index)("name", device.name)("sm", device.capability.name());
    }
  };

  struct WeightsView {
    WeightsLayout layout = WeightsLayout::None;
    std::string file;
    uint64_t bytes = 0;
    std::string upload;
    template <class F>
    void fields(F& f) const {
      f("layout", std::string(weights_layout_name(layout)))("file", file)("bytes", bytes)("upload", upload);
    }
  };

  struct LoadView {
    LoadTimes load;
    template <class F>
    void fields(F& f) const {
      f("read", load.read_ms)("library", load.library_ms)("create", load.create_ms)("weights", load.weights_ms)(
          "total", load.total_ms());
    }
  };

  struct TensorView {
    RunTensor tensor;
    bool input = true;
    template <class F>
    void fields(F& f) const {
      f("index", tensor.index)("name", tensor.name)("dtype", std::string(scalar_type_name(tensor.scalar_type)))(
          "shape", tensor.shape);
      if (input) f("source", tensor.file);
      else if (!tensor.file.empty()) f("file", tensor.file);
    }
  };

  struct CheckView {
    RunCheck check;
    template <class F>
    void fields(F& f) const {
      const OutputComparison& c = check.comparison;
      f("output", c.name)("expected", check.expected_file)("passed", c.passed())("atol", c.tolerance.atol)(
          "rtol", c.tolerance.rtol)("tolerance_rule", c.tolerance.rule)("max_abs_error", c.stats.max_abs_error)("mean_abs_error", c.stats.mean_abs_error)(
          "max_rel_error", c.stats.max_rel_error)("mean_rel_error", c.stats.mean_rel_error)(
          "required_atol", c.stats.required_atol)("mismatches", c.stats.mismatch_count)(
          "problem", c.problem.empty() ? std::optional<std::string>() : c.problem);
    }
  };

  struct TimingView {
    int warmup = 0;
    TimingStats stats;
    bool unstable = false;
    template <class F>
    void fields(F& f) const {
      f("warmup", warmup)("iterations", stats.count)("min_ms", stats.min_ms)("median_ms", stats.median_ms)(
          "p90_ms", stats.p90_ms)("p99_ms", stats.p99_ms)("max_ms", stats.max_ms)("mean_ms", stats.mean_ms)(
          "stddev_ms", stats.stddev_ms)("coefficient_of_variation", stats.coefficient_of_variation)(
          "calls_per_second", stats.calls_per_second)("unstable", unstable);
    }
  };

  struct RuntimeView {
    RuntimeUse use;
    std::string libraries;
    template <class F>
    void fields(F& f) const {
      f("kind", std::string(aoti_runtime_name(use.kind)))("name", use.name)("reason", use.reason)("libraries",
                                                                                                    libraries);
    }
  };

  struct GraphView {
    GraphState state;
    template <class F>
    void fields(F& f) const {
      f("requested", state.requested)("active", state.active)(
          "why_not", state.why_not.empty() ? std::optional<std::string>() : state.why_not);
    }
  };

  // The report convention of every library report (inspect_model.h):
  // fields(F&) describes it to a printer; schemas/run.schema.json.
  template <class F>
  void fields(F& f) const {
    const RunReport& r = *this;
    f("part", r.part)("source", r.source)("checked", r.checked)("method", r.method)("libtorch", r.libtorch)("runtime", RuntimeView{r.runtime, r.load.libraries})(
        "device", DeviceView{r.device})(
        "variant", r.variant)("kernels", r.kernels)(
        "weights", WeightsView{r.weights_layout, r.weights_file, r.load.weight_bytes, r.load.upload_method})(
        "load_ms", LoadView{r.load})("upload_gb_per_s", r.load.upload_gb_per_second())("inputs", tensors(r.inputs, true))(
        "outputs", tensors(r.outputs, false))("first_call_ms", r.first_call_ms)("next_call_ms", r.next_call_ms)(
        "tuning", r.tuning);
    if (r.verdict) {
      std::vector<CheckView> check_views;
      for (const RunCheck& check : r.checks) check_views.push_back({check});
      f("checks", check_views)("verdict", *r.verdict);
    }
    if (r.timing) f("timing", TimingView{r.warmup, *r.timing, stability_warning(*r.timing).has_value()});
    f("cuda_graph", GraphView{r.graphs});
    f("warnings", r.warnings);
  }
  static std::vector<TensorView> tensors(const std::vector<RunTensor>& list, bool input) {
    std::vector<TensorView> out;
    for (const RunTensor& t : list) out.push_back({t, input});
    return out;
  }
};

// Usage errors for a bad request (a build without LibTorch, an input given
// twice or missing, a name the library does not have); other errors as
// open_run_part and the runner give them. A differing output is not an
// error: see RunReport::passed().
Result<RunReport> run_part(const RunRequest& request);

// An expected output, to compare with the output at `index`.
struct ExpectedOutput {
  size_t index = 0;
  std::string name;  // how the verdict names it: "output 0", or the library's name
  TensorBytes tensor;
  Tolerance tolerance;
  // false: a sampler's output, with no expected values; `tensor` gives the
  // dtype and shape only (check_unvalued_output).
  bool compare_values = true;
};

// A host tensor as the comparison reads it.
TensorBytes tensor_bytes(const HostTensor& tensor);
// A view of a temporary would dangle (a GPU test compared outputs with freed
// memory this way).
TensorBytes tensor_bytes(HostTensor&& tensor) = delete;

// tolerance.h's rule for each expected output against what the method
// returned; an index past the outputs, or a dtype or shape that differs, is
// a comparison with a problem, not an error. What `run --expect` and verify's
// test cases share.
std::vector<OutputComparison> compare_outputs(const std::vector<HostTensor>& outputs,
                                              const std::vector<ExpectedOutput>& expected);

}  // namespace ptb
