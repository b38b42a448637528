// Running a part's AOTInductor library on a GPU without PyTorch's package
// loader: the runner API. It needs nothing but libbase, so that the runtime
// modules that implement it (runtime_module.h in the source tree) carry no
// file format, JSON or FlatBuffers code into a robot's process.
//
// Two runtimes implement it, each a module loaded at run time:
//
//   - the built-in runtime (libptbundle_builtin_runtime.so, built with the
//     CUDA toolkit): the aoti_torch_* shims and the CUDA runtime that a
//     library compiled with aot_inductor.link_libtorch=False (as ExecuTorch
//     compiles them) imports, with cuBLAS and cuDNN opened at first use for
//     the GEMM and convolution shims; no LibTorch anywhere;
//   - the LibTorch runtime (libptbundle_libtorch_runtime.so, built only when
//     CMake found LibTorch): for libraries that name libtorch among their
//     dependencies (DT_NEEDED), whose shims are LibTorch's.
//
// runtime_choice.h says which one a library needs, from its ELF, before
// anything is loaded. Both drive AOTInductor's model-container C ABI
// (torch/csrc/inductor/aoti_runtime/interface.h) the same way
// (runner/container_driver.h): the library written to a private folder and
// dlopened, its container created, its weights bound (one blob through
// AOTInductorModelUpdateConstantsFromBlob, or one allocation for per-FQN
// weights bound as user-managed constants, as ExecuTorch's CudaWeightCache
// binds them), then calls.
//
// One runtime per process: the built-in runtime is loaded RTLD_GLOBAL (the
// library finds its imports only in the global scope), and its aoti_torch_*
// would then be what a libtorch-linked library or LibTorch itself binds to.
// So the first runtime loaded serves the process: after LibTorch,
// link_libtorch=False libraries run under LibTorch (which provides the same
// shims); after the built-in runtime, a library needing LibTorch is refused
// with that reason.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

enum class AotiRuntime {
  Auto,      // the built-in runtime unless the library needs LibTorch
  Builtin,   // aot_inductor.link_libtorch=False libraries only
  LibTorch,  // any library, in a build with LibTorch
};
const char* aoti_runtime_name(AotiRuntime runtime);  // "auto", "builtin", "libtorch"
std::optional<AotiRuntime> parse_aoti_runtime(const std::string& text);

// A tensor in host memory, row-major and contiguous, as in an .npy file.
// scalar_type: c10 / ExecuTorch ScalarType (6 float32, 15 bfloat16, ...).
struct HostTensor {
  int8_t scalar_type = 0;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

// A tensor in GPU memory the caller owns (a robot program's buffers).
struct DeviceTensor {
  void* data = nullptr;
  int32_t scalar_type = 6;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements; empty: contiguous
};

enum class WeightsLayout { None, Blob, PerFqn };
const char* weights_layout_name(WeightsLayout layout);  // "none", "blob", "per_fqn"

// One per-FQN weight as ExecuTorch's CUDA payload records it.
struct WeightMeta {
  std::string fqn;
  std::string storage_key;  // the named-data entry holding its bytes
  uint64_t storage_nbytes = 0;
  int32_t dtype = 0;        // ScalarType
  int32_t device_type = 1;  // 0 CPU, 1 CUDA
  int64_t storage_offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct FqnWeightBytes {
  WeightMeta meta;
  Bytes bytes;  // exactly meta.storage_nbytes
};

struct PartWeights {
  WeightsLayout layout = WeightsLayout::None;
  std::string file;  // the file they are in, for messages
  std::string blob_key;
  Bytes blob;
  std::vector<FqnWeightBytes> tensors;
  // Inline: the runtime modules use it and link nothing of libcuda.
  uint64_t total_bytes() const {
    uint64_t total = blob.size();
    for (const auto& tensor : tensors) total += tensor.bytes.size();
    return total;
  }
};

// Where the time to make a part runnable went.
struct LoadTimes {
  double read_ms = 0;      // opening the files and checking what will be loaded
  double library_ms = 0;   // writing the library to a private folder and dlopen
  double create_ms = 0;    // creating the model container on the GPU
  double weights_ms = 0;   // uploading the weights to the GPU
  uint64_t weight_bytes = 0;
  std::string upload_method;  // how the weights reached the GPU, for people
  std::string libraries;      // what the runtime opened for this part ("cuBLASLt 13.0 (...)"), for people
  double total_ms() const { return read_ms + library_ms + create_ms + weights_ms; }
  // 0 when nothing was uploaded.
  double upload_gb_per_second() const;
};

// A kernel file the library loads by name at a kernel's first launch
// (AOTInductor's embed_kernel_binary=False): the runtime writes each into a
// private folder (0700, names checked again) that the container is created
// with as its cubin_dir, and removes it with the model.
struct KernelFileBytes {
  std::string name;  // "c5j...cubin"
  Bytes bytes;
};

// One choice a runtime's search made at a shape's first call (the built-in
// runtime's cuBLASLt algorithm of a GEMM, cuDNN engine and route of a
// convolution), as `ptbundle tune` records it in a bundle's tune file
// (ptbundle/bundle/tune_file.h) and hands it back to the runtime before the
// first call. `key` and `choice` are the runtime's own words, checked by the
// runtime before use; `library_version` is the version of the library that
// made the choice (cuBLASLt's for "gemm", cuDNN's for "convolution"): a
// choice made with another version is ignored.
struct TunedChoice {
  std::string shim;  // "gemm", "convolution"
  std::string key;
  std::string choice;
  uint64_t library_version = 0;
  bool searched = false;  // reported choices: found by a search in this process, not taken from a tune file
};

// The recorded choices for the GPU a model is loaded on, and the file they
// came from (for messages).
struct TunedChoices {
  std::string source;  // "bundle/tune.json"
  std::vector<TunedChoice> choices;
};

struct LoadRequest {
  std::string label;  // "part encoder", for messages
  Bytes library;
  std::string library_origin;  // "model.pte: named data 'abc_so_blob'"
  std::vector<KernelFileBytes> kernel_files;
  // The weights to bind; none (or WeightsLayout::None) for a library that
  // holds its own (package_constants_in_so), which its container loads.
  const PartWeights* weights = nullptr;
  int device = 0;
  // Makes the library check each input's dtype, shape, strides and device
  // itself (AOTI_RUNTIME_CHECK_INPUTS, for its first call only: the library
  // reads the variable once): for parts without a signature.
  bool library_checks_inputs = false;
  // Weights go through pinned staging buffers (Stager); false leaves them to
  // pageable cudaMemcpy, to compare or to rule the staging out.
  bool staged_upload = true;
  AotiRuntime runtime = AotiRuntime::Auto;
  // Calls are captured into a CUDA graph after their first call and
  // replayed (see AotiModel::graph_state); off: every call runs the library.
  bool cuda_graphs = false;
  // Seeds the runtime's random number shims (rand, randn, randint): the
  // same seed gives the same draws.
  uint64_t seed = 0;
  // The tune file's choices for this GPU, handed to the runtime before the
  // library is loaded; shapes without one are searched at their first call.
  // Not owned; null: none.
  const TunedChoices* tuned = nullptr;
  // Filled by AotiModel::load: the library's SHA-256 (the runtime opens the
  // same bytes once per process) and the aoti_* functions it imports (the
  // runtime opens cuBLAS or cuDNN for them before the library).
  std::string library_sha256;
  std::vector<std::string> imports;
};

// Which runtime a model was loaded with, and why.
struct RuntimeUse {
  AotiRuntime kind = AotiRuntime::Builtin;  // Builtin or LibTorch
  std::string name;                         // "built-in (CUDA runtime 13.0)", "LibTorch 2.11.0"
  std::string reason;                       // "the library needs no libtorch", ...
};

// Whether calls replay a CUDA graph, and if not, why not.
struct GraphState {
  bool requested = false;
  bool active = false;     // a graph was captured and replays
  std::string why_not;     // "the library synchronizes with the host (aoti_torch_cuda_nonzero)", ...
};

class AotiModel {
 public:
  static Result<AotiModel> load(LoadRequest request);

  AotiModel();
  AotiModel(AotiModel&&) noexcept;
  AotiModel& operator=(AotiModel&&) noexcept;
  ~AotiModel();

  size_t num_inputs() const;
  size_t num_outputs() const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  // library_ms, create_ms, weights_ms and weight_bytes; read_ms is the caller's.
  const LoadTimes& load_times() const;
  const RuntimeUse& runtime() const;
  GraphState graph_state() const;

  // One call: inputs copied to the GPU, outputs copied back.
  Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs);

  // `warmup` untimed calls, then `iterations` calls each timed with CUDA
  // events around it on the stream it runs on; inputs stay on the GPU and
  // outputs are dropped. Per-call times in milliseconds.
  Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations);

  // One call on tensors already on the GPU, on `stream` (a cudaStream_t;
  // nullptr: the model's own). The outputs are written into the caller's
  // buffers in stream order; nothing is synchronized.
  Status run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                       void* stream = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The choices the runtime serving this process made on `device` so far
// (searched, or taken from a tune file), sorted by shim and key; empty for a
// runtime that makes none (LibTorch's), or before any model was loaded.
std::vector<TunedChoice> runtime_choices(int device);

// The runtime that serves this process (see above), once a model was loaded.
std::optional<AotiRuntime> process_aoti_runtime();

// Host-to-device copy rate (GB/s) from pinned memory, `bytes` at a time, the
// best of `repeats`: what weight uploads are measured against.
Result<double> pinned_upload_gb_per_second(uint64_t bytes, int device, int repeats);

}  // namespace ptb
