// Stream and device guards of the shim ABI. A library's run() makes the
// caller's stream current for its duration with a stream guard; the
// runtime's allocations and copies made meanwhile go on that stream.
#include <cuda_runtime_api.h>

#include <new>

#include "engines/tensor.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

struct DeviceGuard {
  int previous = -1;
};

struct StreamGuard {
  int previous_device = -1;
  int32_t device = 0;
  void* previous_stream = nullptr;
};

// cudaSetDevice only where the device changes, as ATen's guards do: every
// run() of a library creates and deletes a stream guard, almost always for
// the device already current.
cudaError_t switch_device(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return cudaSuccess;
  return cudaSetDevice(device);
}

AOTITorchError set_device(const char* function, int32_t device) {
  cudaError_t code = switch_device(device);
  if (code != cudaSuccess) return fail(function, "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(code));
  return kShimSuccess;
}

AOTITorchError create_device_guard(const char* function, int32_t device, DeviceGuard** ret) {
  auto* guard = new (std::nothrow) DeviceGuard;
  if (!guard) return fail(function, "out of host memory");
  cudaGetDevice(&guard->previous);
  if (set_device(function, device) != kShimSuccess) {
    delete guard;
    return kShimFailure;
  }
  *ret = guard;
  return kShimSuccess;
}

AOTITorchError delete_device_guard(DeviceGuard* guard) {
  if (!guard) return kShimSuccess;
  if (guard->previous >= 0) switch_device(guard->previous);
  delete guard;
  return kShimSuccess;
}

}  // namespace

AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret) {
  DeviceGuard* guard = nullptr;
  AOTITorchError code = create_device_guard("aoti_torch_create_cuda_guard", device_index, &guard);
  *ret = reinterpret_cast<CUDAGuardHandle>(guard);
  return code;
}

AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  return delete_device_guard(reinterpret_cast<DeviceGuard*>(guard));
}

AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle, int32_t device_index) {
  return set_device("aoti_torch_cuda_guard_set_index", device_index);
}

AOTITorchError aoti_torch_create_device_guard(int32_t device_index, DeviceGuardHandle* ret) {
  DeviceGuard* guard = nullptr;
  AOTITorchError code = create_device_guard("aoti_torch_create_device_guard", device_index, &guard);
  *ret = reinterpret_cast<DeviceGuardHandle>(guard);
  return code;
}

AOTITorchError aoti_torch_delete_device_guard(DeviceGuardHandle guard) {
  return delete_device_guard(reinterpret_cast<DeviceGuard*>(guard));
}

AOTITorchError aoti_torch_device_guard_set_index(DeviceGuardHandle, int32_t device_index) {
  return set_device("aoti_torch_device_guard_set_index", device_index);
}

AOTITorchError aoti_torch_get_current_device_index(int32_t* ret) {
  int device = 0;
  cudaError_t code = cudaGetDevice(&device);
  if (code != cudaSuccess) return fail("aoti_torch_get_current_device_index", cudaGetErrorString(code));
  *ret = device;
  return kShimSuccess;
}

AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index, CUDAStreamGuardHandle* ret) {
  const char* function = "aoti_torch_create_cuda_stream_guard";
  if (!ret) return fail(function, "no place for the result");
  auto* guard = new (std::nothrow) StreamGuard;
  if (!guard) return fail(function, "out of host memory");
  cudaGetDevice(&guard->previous_device);
  if (set_device(function, device_index) != kShimSuccess) {
    delete guard;
    return kShimFailure;
  }
  guard->device = device_index;
  guard->previous_stream = current_stream(device_index);
  set_current_stream(device_index, stream);
  *ret = reinterpret_cast<CUDAStreamGuardHandle>(guard);
  return kShimSuccess;
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle handle) {
  auto* guard = reinterpret_cast<StreamGuard*>(handle);
  if (!guard) return kShimSuccess;
  set_current_stream(guard->device, guard->previous_stream);
  if (guard->previous_device >= 0) switch_device(guard->previous_device);
  delete guard;
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret) {
  *ret = current_stream(device_index);
  return kShimSuccess;
}
