// The few CUDA driver API entry points ptbundle uses, with their signatures
// written out here (from cuda.h, CUDA 13.0) so that building needs no CUDA
// toolkit, and the library loaded with dlopen so that running needs no GPU.
#pragma once

#include <cstddef>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::detail {

using CUresult = int;
using CUdevice = int;
struct CUctx_st;
struct CUmod_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
struct CUuuid {
  char bytes[16];
};

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr int kAttributeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr int kAttributeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct DriverApi {
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetUuid)(CUuuid* uuid, CUdevice device) = nullptr;  // _v2 where the driver has it
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;  // cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;  // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;  // optional
};

// The driver at `library`, loaded once per path and kept for the life of the
// process (unloading libcuda while contexts live is not safe). The error
// names the library and what dlopen or dlsym said.
Result<const DriverApi*> load_driver(const std::string& library);

// "CUDA_ERROR_NO_DEVICE (100)", or "CUresult 100" without cuGetErrorName.
std::string result_name(const DriverApi& api, CUresult result);

}  // namespace ptb::detail
