// Listing the GPUs. Each way there can be none is reported as a reason, in
// the order they are met: no driver library, a driver that will not start
// (the toolkit's stub library says CUDA_ERROR_STUB_LIBRARY), no devices.
#include <cstdio>

#include "driver_api.h"
#include "ptbundle/cuda/gpu.h"

namespace ptb {
namespace {

using namespace detail;

std::string format_uuid(const CUuuid& uuid) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += digits;
  }
  return text;
}

Result<GpuInfo> describe_device(const DriverApi& api, int ordinal) {
  const auto fail = [&](const char* call, CUresult result) {
    return invalid("device " + std::to_string(ordinal) + ": " + call + " failed: " + result_name(api, result));
  };
  GpuInfo info;
  info.index = ordinal;
  CUdevice device = 0;
  if (CUresult r = api.cuDeviceGet(&device, ordinal); r != kCudaSuccess) return fail("cuDeviceGet", r);
  char name[256] = {};
  if (CUresult r = api.cuDeviceGetName(name, sizeof name - 1, device); r != kCudaSuccess)
    return fail("cuDeviceGetName", r);
  info.name = name;
  int major = 0, minor = 0;
  if (CUresult r = api.cuDeviceGetAttribute(&major, kAttributeCapabilityMajor, device); r != kCudaSuccess)
    return fail("cuDeviceGetAttribute", r);
  if (CUresult r = api.cuDeviceGetAttribute(&minor, kAttributeCapabilityMinor, device); r != kCudaSuccess)
    return fail("cuDeviceGetAttribute", r);
  info.capability = {static_cast<uint32_t>(major), static_cast<uint32_t>(minor)};
  CUuuid uuid{};
  if (CUresult r = api.cuDeviceGetUuid(&uuid, device); r != kCudaSuccess) return fail("cuDeviceGetUuid", r);
  info.uuid = format_uuid(uuid);
  size_t memory = 0;
  if (CUresult r = api.cuDeviceTotalMem(&memory, device); r != kCudaSuccess) return fail("cuDeviceTotalMem", r);
  info.memory_bytes = memory;
  return info;
}

}  // namespace

GpuReport discover_gpus(const std::string& library) {
  GpuReport report;
  auto api = load_driver(library);
  if (!api.ok()) {
    report.reason = api.error().message;
    return report;
  }
  const DriverApi& driver = **api;
  report.driver_loaded = true;
  int version = 0;
  if (driver.cuDriverGetVersion(&version) == kCudaSuccess && version > 0)
    report.driver_version = static_cast<uint32_t>(version);
  if (CUresult r = driver.cuInit(0); r != kCudaSuccess) {
    report.reason = r == kCudaErrorNoDevice ? "driver found, 0 devices" : "cuInit failed: " + result_name(driver, r);
    return report;
  }
  int count = 0;
  if (CUresult r = driver.cuDeviceGetCount(&count); r != kCudaSuccess) {
    report.reason = "cuDeviceGetCount failed: " + result_name(driver, r);
    return report;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto info = describe_device(driver, ordinal);
    if (!info.ok()) {
      report.gpus.clear();
      report.reason = info.error().message;
      return report;
    }
    report.gpus.push_back(std::move(*info));
  }
  if (report.gpus.empty()) report.reason = "driver found, 0 devices";
  return report;
}

Result<CudaDeviceInfo> cuda_device(int index) {
  const GpuReport report = discover_gpus();
  if (report.gpus.empty()) return invalid("no CUDA GPU: " + report.reason);
  for (const GpuInfo& gpu : report.gpus) {
    if (gpu.index == index) return CudaDeviceInfo{gpu.index, gpu.name, gpu.capability, report.driver_version};
  }
  return usage_error("no CUDA device " + std::to_string(index) + "; the driver sees " +
                     std::to_string(report.gpus.size()));
}

}  // namespace ptb
