#include "driver_api.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

namespace ptb::detail {
namespace {

template <class F>
bool resolve(void* handle, const char* name, F*& slot) {
  slot = reinterpret_cast<F*>(dlsym(handle, name));
  return slot != nullptr;
}

Result<DriverApi> open_driver(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return invalid(library + " not found: " + (why ? why : "dlopen failed"));
  }
  DriverApi api;
  std::string missing;
  const auto need = [&](const char* name, auto& slot) {
    if (!resolve(handle, name, slot)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need("cuInit", api.cuInit);
  need("cuDriverGetVersion", api.cuDriverGetVersion);
  need("cuDeviceGetCount", api.cuDeviceGetCount);
  need("cuDeviceGet", api.cuDeviceGet);
  need("cuDeviceGetName", api.cuDeviceGetName);
  need("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  if (!resolve(handle, "cuDeviceGetUuid_v2", api.cuDeviceGetUuid)) need("cuDeviceGetUuid", api.cuDeviceGetUuid);
  need("cuDeviceTotalMem_v2", api.cuDeviceTotalMem);
  need("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  need("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease);
  need("cuCtxSetCurrent", api.cuCtxSetCurrent);
  need("cuModuleLoadData", api.cuModuleLoadData);
  need("cuModuleUnload", api.cuModuleUnload);
  resolve(handle, "cuGetErrorName", api.cuGetErrorName);
  if (!missing.empty()) {
    dlclose(handle);
    return invalid(library + " lacks " + missing + "; expected an NVIDIA driver for CUDA 11 or newer");
  }
  return api;  // the handle stays open on purpose, see load_driver
}

}  // namespace

Result<const DriverApi*> load_driver(const std::string& library) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DriverApi>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(library);
  if (found != loaded.end()) return static_cast<const DriverApi*>(found->second.get());
  PTB_TRY(DriverApi api, open_driver(library));
  auto& slot = loaded[library];
  slot = std::make_unique<DriverApi>(api);
  return static_cast<const DriverApi*>(slot.get());
}

// The codes this tool meets most, for drivers whose cuGetErrorName does not
// answer (the toolkit's stub library answers nothing).
const char* known_result_name(CUresult result) {
  switch (result) {
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    default: return nullptr;
  }
}

std::string result_name(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != kCudaSuccess || name == nullptr)
    name = known_result_name(result);
  if (name == nullptr) return "CUresult " + std::to_string(result);
  return std::string(name) + " (" + std::to_string(result) + ")";
}

}  // namespace ptb::detail
