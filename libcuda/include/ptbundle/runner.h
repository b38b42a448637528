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
#include <string>
#include <vector>

#include "ptbundle/result.h"
#include "ptbundle/run_part.h"
#include "ptbundle/runner_config.h"
#include "ptbundle/timing.h"

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

// Host-to-device copy rate (GB/s) from pinned memory, `bytes` at a time, the
// best of `repeats`: what weight uploads are measured against.
Result<double> pinned_upload_gb_per_second(uint64_t bytes, int device, int repeats);

}  // namespace ptb
