// Asking the driver itself whether an image loads: the ground truth the GPU
// check compares our verdicts with.
#include <cstring>
#include <vector>

#include "driver_api.h"
#include "ptbundle/cuda/gpu.h"

namespace ptb {

using namespace detail;

Result<ModuleLoadResult> load_module_on_gpu(int index, Bytes image, const std::string& library) {
  PTB_TRY(const DriverApi* api, load_driver(library));
  const auto fail = [&](const char* call, CUresult result) {
    return invalid("no CUDA GPU: " + std::string(call) + " failed: " + result_name(*api, result));
  };
  if (CUresult r = api->cuInit(0); r != kCudaSuccess) return fail("cuInit", r);
  CUdevice device = 0;
  if (CUresult r = api->cuDeviceGet(&device, index); r != kCudaSuccess) return fail("cuDeviceGet", r);
  CUcontext context = nullptr;
  if (CUresult r = api->cuDevicePrimaryCtxRetain(&context, device); r != kCudaSuccess)
    return fail("cuDevicePrimaryCtxRetain", r);
  if (CUresult r = api->cuCtxSetCurrent(context); r != kCudaSuccess) {
    api->cuDevicePrimaryCtxRelease(device);
    return fail("cuCtxSetCurrent", r);
  }
  // An 8-byte aligned copy, NUL-terminated: PTX text must end in a NUL and
  // images found at odd offsets inside libraries are not aligned.
  std::vector<uint64_t> copy(image.size() / 8 + 1, 0);
  if (!image.empty()) std::memcpy(copy.data(), image.data(), image.size());
  CUmodule module = nullptr;
  const CUresult loaded = api->cuModuleLoadData(&module, copy.data());
  if (loaded == kCudaSuccess) api->cuModuleUnload(module);
  api->cuDevicePrimaryCtxRelease(device);
  ModuleLoadResult result;
  result.loaded = loaded == kCudaSuccess;
  result.code = loaded;
  result.code_name = result_name(*api, loaded);
  return result;
}

}  // namespace ptb
