// What a runtime module gives the runner: the built-in runtime
// (libptbundle_builtin_runtime.so) and the LibTorch runtime
// (libptbundle_libtorch_runtime.so) are both shared objects loaded at run
// time (src/runtime_modules.cc says why), each exporting one C function that
// returns this table. Both are built from this tree with the same compiler,
// so C++ types cross the boundary; kRuntimeModuleAbi changes with any change
// here or in ptbundle/cuda/runner.h.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/cuda/runner.h"

namespace ptb::detail {

inline constexpr uint32_t kRuntimeModuleAbi = 3;
inline constexpr const char* kRuntimeModuleEntry = "ptbundle_runtime_module";

// One loaded model container on one GPU.
class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  virtual const std::vector<std::string>& input_names() const = 0;
  virtual const std::vector<std::string>& output_names() const = 0;
  virtual const LoadTimes& load_times() const = 0;
  virtual GraphState graph_state() const = 0;
  virtual Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs) = 0;
  virtual Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup,
                                                 int iterations) = 0;
  virtual Status run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                               void* stream) = 0;
};

struct RuntimeModule {
  uint32_t abi = kRuntimeModuleAbi;
  // "built-in (CUDA runtime 13.0)", "LibTorch 2.11.0"
  std::string (*describe)() = nullptr;
  Result<std::unique_ptr<ModelBackend>> (*load)(const LoadRequest& request) = nullptr;
  Result<double> (*pinned_upload_gb_per_second)(uint64_t bytes, int device, int repeats) = nullptr;
  // Recorded choices for `device` (runner.h's TunedChoices), taken before
  // its next first call of a shape; each is checked when its shape is first
  // seen, and one that does not fit is ignored with a message on stderr
  // naming the source and key. Null in a module that searches nothing.
  void (*use_tuned)(int device, const TunedChoices& tuned) = nullptr;
  // What it chose on `device` so far. Null in a module that searches nothing.
  std::vector<TunedChoice> (*choices_made)(int device) = nullptr;
};

}  // namespace ptb::detail

using PtbRuntimeModuleEntry = const ptb::detail::RuntimeModule* (*)();
