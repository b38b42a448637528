// The GPUs of this machine, asked of the NVIDIA driver (libcuda.so.1) loaded
// at run time: ptbundle never links against it, so it installs and runs on
// machines without a GPU, where "no CUDA GPU" is an answer, not an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/kernels/compat.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

inline constexpr const char* kDriverLibrary = "libcuda.so.1";

struct GpuInfo {
  int index = 0;  // the driver's ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;
  GpuCapability capability;
  std::string uuid;  // "GPU-8-4-4-4-12 hex digits", as nvidia-smi prints it
  uint64_t memory_bytes = 0;
  // The report convention of every library report (inspect_model.h):
  // fields(F&) describes it to a printer; schemas/gpus.schema.json.
  template <class F>
  void fields(F& f) const {
    f("index", index)("name", name)(
        "compute_capability", std::to_string(capability.major) + "." + std::to_string(capability.minor))(
        "sm", capability.name())("uuid", uuid)("memory_bytes", memory_bytes);
  }
};

struct GpuReport {
  bool driver_loaded = false;
  uint32_t driver_version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0; 0 without a driver
  std::vector<GpuInfo> gpus;
  // Why `gpus` is empty ("libcuda.so.1 not found: <dlerror>", "driver found,
  // 0 devices", "cuInit failed: CUDA_ERROR_..."); empty when GPUs were found.
  std::string reason;
  struct Driver {
    bool loaded = false;
    uint32_t version = 0;
    template <class F>
    void fields(F& f) const {
      f("loaded", loaded)("cuda_version", version ? std::optional(cuda_version_name(version)) : std::nullopt);
    }
  };
  template <class F>
  void fields(F& f) const {
    f("driver", Driver{driver_loaded, driver_version})("gpus", gpus)(
        "reason", gpus.empty() ? std::optional("no CUDA GPU: " + reason) : std::nullopt);
  }
};

// Never fails: every way of finding no GPU is a report with a reason.
// `library` is the driver to load (tests point it at other files).
GpuReport discover_gpus(const std::string& library = kDriverLibrary);

// The GPU a part runs on, as the driver numbers it (the CUDA runtime
// numbers them the same way), and the driver's version.
struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  GpuCapability capability;
  uint32_t driver_version = 0;
};

// CUDA device `index`, from one discovery; an error without a GPU.
Result<CudaDeviceInfo> cuda_device(int index);

// What the driver says when it is asked to load one image on a GPU.
struct ModuleLoadResult {
  bool loaded = false;
  int code = 0;            // CUresult
  std::string code_name;   // "CUDA_SUCCESS", "CUDA_ERROR_NO_BINARY_FOR_GPU", ...
};

// cuModuleLoadData on device `index` (in its primary context), then
// cuModuleUnload. `image` is a cubin, a fatbin container or PTX text (a NUL
// is appended to PTX that lacks one). An error when there is no driver or no
// such device; a refusal of the image is a result with loaded = false.
Result<ModuleLoadResult> load_module_on_gpu(int index, Bytes image, const std::string& library = kDriverLibrary);

}  // namespace ptb
