// Running a part's AOTInductor library on the GPU, without PyTorch's package
// loader, through one of two runtimes:
//
//   - the built-in runtime (libptbundle_aoti_runtime.so, built with the CUDA
//     toolkit): provides the aoti_torch_* shims and the CUDA runtime that a
//     library compiled with aot_inductor.link_libtorch=False (as ExecuTorch
//     compiles them) imports; no LibTorch anywhere;
//   - the LibTorch runner (libptbundle_libtorch_runner.so, built only when
//     CMake found LibTorch): for libraries that name libtorch among their
//     dependencies (DT_NEEDED), whose shims are LibTorch's.
//
// Both are modules loaded at run time (src/runtime_modules.cc says why), so
// no binary of ptbundle links LibTorch. Before anything is loaded, the
// library's ELF says which runtime it needs and, for the built-in one,
// whether every aoti_torch_* function it imports is provided
// (aoti_runtime.h); a library that needs one the runtime lacks is refused
// with all their names and the fix.
//
// The library bytes are written to a private folder (mkdtemp, mode 0700),
// opened with dlopen, and the folder is removed at once, on failure too: the
// mapping outlives the file. The library is then driven through AOTInductor's
// model-container C ABI (torch/csrc/inductor/aoti_runtime/interface.h).
//
// Weights: the single-blob layout goes through
// AOTInductorModelUpdateConstantsFromBlob, after checking the blob holds
// exactly the bytes the library's constants need; per-FQN weights are
// uploaded into one allocation and bound with
// AOTInductorModelContainerUpdateUserManagedConstantBuffer(Pairs), as
// ExecuTorch's CudaWeightCache binds them.
//
// One runtime per process: the built-in runtime is loaded RTLD_GLOBAL (the
// library finds its imports only in the global scope), and its aoti_torch_*
// would then also be what a libtorch-linked library or LibTorch itself binds
// to. So the first runtime loaded serves the process: after LibTorch,
// link_libtorch=False libraries run under LibTorch (which provides the same
// shims); after the built-in runtime, a library needing LibTorch is refused
// with that reason. `ptbundle run` loads one part per process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner_config.h"
#include "ptbundle/results/timing.h"

namespace ptb {

#if defined(PTB_HAVE_LIBTORCH)
inline constexpr bool kLibTorchRunnerBuilt = true;
#else
inline constexpr bool kLibTorchRunnerBuilt = false;
#endif
#if defined(PTB_HAVE_BUILTIN_RUNTIME)
inline constexpr bool kBuiltinRuntimeBuilt = true;
#else
inline constexpr bool kBuiltinRuntimeBuilt = false;
#endif
inline constexpr bool kRunnerBuilt = kBuiltinRuntimeBuilt || kLibTorchRunnerBuilt;

// What CMake said of LibTorch, without its own hint.
inline std::string libtorch_status() {
  std::string found = PTB_LIBTORCH_STATUS;
  return found.substr(0, found.find(';'));
}

inline constexpr const char* kLibTorchFlags =
    "-DPTB_LIBTORCH=ON -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')";

// Why this build cannot run parts, and the CMake flags that add a runtime;
// empty when it can.
inline std::string runner_unavailable_reason() {
  if (kRunnerBuilt) return "";
  return std::string("ptbundle run needs the CUDA toolkit (for its built-in AOTInductor runtime) or LibTorch, and "
                     "this build has neither (") + PTB_BUILTIN_RUNTIME_STATUS + "; " + libtorch_status() +
         "); rebuild with the CUDA toolkit installed, or with " + kLibTorchFlags;
}

// "2.11.0", or "" without LibTorch.
inline std::string libtorch_version() { return PTB_LIBTORCH_VERSION; }

enum class AotiRuntime {
  Auto,      // the built-in runtime unless the library needs LibTorch
  Builtin,   // aot_inductor.link_libtorch=False libraries only
  LibTorch,  // any library, in a build with LibTorch
};
const char* aoti_runtime_name(AotiRuntime runtime);  // "auto", "builtin", "libtorch"
std::optional<AotiRuntime> parse_aoti_runtime(const std::string& text);

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  GpuCapability capability;
};

// CUDA device `index` as the driver numbers it (the CUDA runtime numbers
// them the same way); an error without a GPU.
Result<CudaDeviceInfo> cuda_device(int index);

// A tensor in GPU memory the caller owns (a robot program's buffers).
struct DeviceTensor {
  void* data = nullptr;
  int32_t scalar_type = 6;       // ExecuTorch / c10 ScalarType: 6 float32
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements; empty: contiguous
};

struct LoadRequest {
  std::string label;  // "part encoder", for messages
  Bytes library;
  std::string library_origin;  // "model.pte: named data 'abc_so_blob'"
  const PartWeights* weights = nullptr;
  int device = 0;
  // Makes the library check each input's dtype, shape, strides and device
  // itself (AOTI_RUNTIME_CHECK_INPUTS): for parts without a signature.
  bool library_checks_inputs = false;
  // Weights go through pinned staging buffers (Stager); false leaves them to
  // pageable cudaMemcpy, to compare or to rule the staging out.
  bool staged_upload = true;
  AotiRuntime runtime = AotiRuntime::Auto;
};

// The runtime that serves this process (see above), once a model was loaded.
std::optional<AotiRuntime> process_aoti_runtime();

// Which runtime a model was loaded with, and why.
struct RuntimeUse {
  AotiRuntime kind = AotiRuntime::Builtin;  // Builtin or LibTorch
  std::string name;                         // "built-in (CUDA runtime 13.0)", "LibTorch 2.11.0"
  std::string reason;                       // "the library needs no libtorch", ...
};

class AotiModel {
 public:
  static Result<AotiModel> load(const LoadRequest& request);

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

// Host-to-device copies staged through small pinned buffers by a few
// threads (built into the runtime modules and bench_upload, which link a
// CUDA runtime; not into ptbundle_cuda), each queueing its DMA on its own stream (staged_upload.cc says
// why). The weights of a part are uploaded this way.
struct HostToDevice {
  Bytes source;
  void* device = nullptr;
};

enum class Pinning {
  HostAlloc,  // cudaHostAlloc
  HugePages,  // transparent huge pages, then cudaHostRegister
};

struct StagingOptions {
  int threads = 4;             // each fills its own pinned buffers
  int buffers_per_thread = 2;  // one being filled while the other is in flight
  uint64_t chunk_bytes = 4ull << 20;
  Pinning pinning = Pinning::HostAlloc;
};

class Stager {
 public:
  // Pins threads x buffers_per_thread x chunk_bytes of host memory and
  // starts the threads.
  static Result<std::unique_ptr<Stager>> create(int device, const StagingOptions& options);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Every copy done (or failed) when it returns.
  Status copy(std::span<const HostToDevice> copies);
  double setup_ms() const { return setup_ms_; }
  const StagingOptions& options() const { return options_; }
  // Calls of copy() so far and the time spent in them.
  uint64_t calls() const { return calls_; }
  double busy_ms() const { return busy_ms_; }
  // The CPUs its threads run on (those near the GPU); empty: any.
  const std::vector<int>& cpus() const { return near_cpus_; }

 private:
  struct Lane;
  struct Pool;
  Stager() = default;
  void serve(size_t lane);
  int device_ = 0;
  StagingOptions options_;
  std::vector<int> near_cpus_;
  std::vector<Lane> lanes_;
  std::unique_ptr<Pool> pool_;
  double setup_ms_ = 0;
  uint64_t calls_ = 0;
  double busy_ms_ = 0;
};

// What a load uses: up to 8 threads (half the CPUs, at least 2), each with
// two 4 MiB buffers on huge pages (what was fastest on the H200 machine,
// bench/bench_upload.cc).
StagingOptions default_staging_options();

// The CPUs this process may use on the GPU's NUMA node; empty when unknown,
// or when they are all of them.
std::vector<int> cpus_near_gpu(int device);

// Stager::create, then copy.
Status staged_upload(std::span<const HostToDevice> copies, int device, const StagingOptions& options);

// Host-to-device copy rate (GB/s) from pinned memory, `bytes` at a time, the
// best of `repeats`: what weight uploads are measured against.
Result<double> pinned_upload_gb_per_second(uint64_t bytes, int device, int repeats);

}  // namespace ptb
