// What `ptbundle run` does, as one call: open a part (run_part.h), bind its
// inputs, load it on the GPU, run it once, write and compare its outputs,
// then time it. The CLI only parses options into a RunRequest and prints the
// RunReport.
//
// The order puts every check that needs no GPU work first: the input is
// opened and checked (run_part.h's open_run_input) before this build's
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

struct RunReport {
  std::string part;
  std::string source;
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
  std::vector<RunCheck> checks;        // one per expect, in the order given
  std::optional<std::string> verdict;  // when there were expects
  std::optional<TimingStats> timing;   // when iterations > 0
  int warmup = 0;
  std::vector<std::string> warnings;  // for stderr: unstable timings
  // False when an expected output differs; the report is still whole.
  bool passed() const;
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
