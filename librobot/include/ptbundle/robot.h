// ptbundle for a robot program: open a bundle, verify it, pick the part's
// variant for this GPU, load it, run it with host or device buffers, read
// its timings. One shared library (libptbundle.so) and this header, which
// needs nothing but the standard library and ptbundle/base/result.h:
//
//   find_package(ptbundle REQUIRED)
//   target_link_libraries(robot PRIVATE ptbundle::ptbundle)
//
//   auto model = ptb::robot::Model::open("bundle/", {.part = "encoder"});
//   if (!model.ok()) { fprintf(stderr, "%s\n", model.error().message.c_str()); ... }
//   auto outputs = model->run({input});
//
// No exception crosses this interface: every fallible call returns a
// ptb::Result (or ptb::Status) whose error is one line naming the file and
// what was expected. Libraries compiled with link_libtorch=False run on the
// built-in runtime; others need ptbundle built with LibTorch (and then run
// through its LibTorch runtime module). One runtime serves a process (see
// ptbundle/cuda/runner.h in the source tree).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb::robot {

struct Options {
  std::string part;          // needed when the bundle has several parts
  std::string method;        // default: the only one, else "forward"
  int device = 0;            // CUDA device index
  bool verify = true;        // run `ptbundle verify`'s checks first; any failure refuses the bundle
  std::string runtime = "auto";  // "auto", "builtin" or "libtorch"
  bool staged_upload = true;     // weights through pinned staging buffers
  // Calls are captured into a CUDA graph at the second call and replayed
  // (inputs must keep the shape of that call); LoadInfo::graphs says
  // whether they are, and if not why not.
  bool cuda_graphs = false;
  uint64_t seed = 0;  // the runtime's random draws (samplers): the same seed, the same draws
};

// A tensor in host memory, row-major and contiguous. dtype: c10/ExecuTorch
// ScalarType (6 float32, 4 int64, 15 bfloat16, 5 float16, ...).
struct Tensor {
  int32_t dtype = 6;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// A tensor in GPU memory the program owns.
struct DeviceTensor {
  void* data = nullptr;
  int32_t dtype = 6;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements; empty: contiguous
};

// What the method's signature says of one input (a .pte records it; a .pt2
// does not, and then `known` is false).
// A dimension the library checks against bounds (a dynamic one), read from
// the library itself, so a .pt2's are known too; -1: that bound is not known.
struct DimRange {
  int64_t dim = 0;
  int64_t min = -1;
  int64_t max = -1;
};

struct InputSpec {
  bool known = false;
  int32_t dtype = 6;
  std::vector<int64_t> shape;
  std::vector<DimRange> dynamic;  // Inductor's lower bound is 2 even for Dim(min=1)
};

// Options::verify runs `ptbundle verify`'s checks, test cases included: they
// are judged by the tolerances export recorded (each output's, from its dtype
// and largest magnitude), the rule `run --expect` applies too.
struct Verification {
  bool ran = false;
  size_t passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> failures;  // "check subject: message"
};

struct LoadInfo {
  std::string part, source, method;
  std::string variant;  // which library variant was picked for this GPU, and why
  std::string kernels;  // the kernel verdict for this GPU
  std::string gpu;      // "NVIDIA H200 (sm_90)"
  std::string runtime;  // "built-in (CUDA runtime 13.0)" or "LibTorch 2.11.0"
  std::string runtime_reason;
  std::string weights_layout;  // "blob", "per_fqn", "none"
  std::string upload;          // how the weights reached the GPU
  uint64_t weight_bytes = 0;
  double read_ms = 0, library_ms = 0, create_ms = 0, weights_ms = 0, total_ms = 0;
  std::vector<std::string> input_names, output_names;
  std::vector<InputSpec> inputs;  // one per input name
};

struct GraphInfo {
  bool requested = false;
  bool active = false;  // calls replay a captured CUDA graph
  std::string why_not;
};

struct CallTimes {
  uint64_t count = 0;
  double min_ms = 0, median_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
};

class Model {
 public:
  static Result<Model> open(const std::string& bundle, const Options& options = {});

  Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const LoadInfo& info() const;
  const Verification& verification() const;
  // Whether calls replay a CUDA graph (Options::cuda_graphs), as of now.
  GraphInfo graphs() const;

  // One call: inputs copied to the GPU, outputs copied back.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // One call on the program's GPU buffers, in order on `stream` (a
  // cudaStream_t; nullptr: the model's own); nothing is synchronized.
  Status run(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs, void* stream = nullptr);
  // `warmup` untimed calls, then `iterations` timed with CUDA events.
  Result<CallTimes> time(const std::vector<Tensor>& inputs, int warmup = 10, int iterations = 100);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ptb::robot
