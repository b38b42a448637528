// Running a part's AOTInductor library on the GPU, through LibTorch, without
// PyTorch's package loader.
//
// The library bytes are written to a private folder (mkdtemp, mode 0700),
// opened with dlopen, and the folder is removed at once, on failure too: the
// mapping outlives the file. The library is then driven through AOTInductor's
// model-container C ABI (torch/csrc/inductor/aoti_runtime/interface.h):
// AOTInductorModelContainerCreateWithDevice, the weights entry points,
// AOTInductorModelContainerRun with AtenTensorHandles that are at::Tensor
// pointers (torch/csrc/inductor/aoti_torch/c/shim.h), and ...Delete.
// Libraries linked to libtorch and libraries built with link_libtorch=False
// (as ExecuTorch builds them) both resolve their aoti_torch_* calls against
// the libtorch this program is linked with.
//
// Weights: the single-blob layout goes through
// AOTInductorModelUpdateConstantsFromBlob, after checking the blob holds
// exactly the bytes the library's constants need (a short blob would be read
// past its end); per-FQN weights are uploaded as tensors and bound with
// AOTInductorModelContainerUpdateUserManagedConstantBuffer(Pairs), as
// ExecuTorch's CudaWeightCache binds them.
//
// This header needs no LibTorch. The functions are built only when CMake found
// it (PTB_HAVE_LIBTORCH); without it `ptbundle run` says what is missing.
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
inline constexpr bool kRunnerBuilt = true;
#else
inline constexpr bool kRunnerBuilt = false;
#endif

// Why this build cannot run parts, and the CMake flags that add it; empty
// when it can.
inline std::string runner_unavailable_reason() {
  if (kRunnerBuilt) return "";
  std::string found = PTB_LIBTORCH_STATUS;  // what CMake said, without its own hint
  found = found.substr(0, found.find(';'));
  return "ptbundle run needs LibTorch, and this build has none (" + found +
         "); rebuild with -DPTB_LIBTORCH=ON "
         "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')";
}

// "2.11.0", or "" without LibTorch.
inline std::string libtorch_version() { return PTB_LIBTORCH_VERSION; }

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  GpuCapability capability;
};

// The CUDA device LibTorch sees as `index`; an error without a GPU.
Result<CudaDeviceInfo> cuda_device(int index);

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

  // One call: inputs copied to the GPU, outputs copied back.
  Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs);

  // `warmup` untimed calls, then `iterations` calls each timed with CUDA
  // events around it on the stream it runs on; inputs stay on the GPU and
  // outputs are dropped. Per-call times in milliseconds.
  Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Host-to-device copies staged through small pinned buffers by a few
// threads, each queueing its DMA on its own stream (staged_upload.cc says
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
