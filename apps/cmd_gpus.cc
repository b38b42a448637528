// `ptbundle gpus [--json]`: the GPUs the driver reports. Having none is an
// answer, so the exit code is 0 either way: stdout lists the GPUs (nothing
// when there are none, so a script counting lines counts GPUs) and the reason
// there are none goes to stderr as "no CUDA GPU: <why>". With --json, stdout
// always carries one document whose "reason" says why "gpus" is empty.
#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "ptbundle/cuda/gpu.h"

namespace ptb::app {
namespace {

Json to_json(const GpuReport& report) {
  Json driver = Json::object();
  driver["loaded"] = report.driver_loaded;
  driver["cuda_version"] = report.driver_version ? Json(cuda_version_name(report.driver_version)) : Json(nullptr);
  Json gpus = Json::array();
  for (const GpuInfo& gpu : report.gpus) {
    Json entry = Json::object();
    entry["index"] = gpu.index;
    entry["name"] = gpu.name;
    entry["compute_capability"] = std::to_string(gpu.capability.major) + "." + std::to_string(gpu.capability.minor);
    entry["sm"] = gpu.capability.name();
    entry["uuid"] = gpu.uuid;
    entry["memory_bytes"] = gpu.memory_bytes;
    gpus.push_back(std::move(entry));
  }
  Json document = Json::object();
  document["driver"] = std::move(driver);
  document["gpus"] = std::move(gpus);
  document["reason"] = report.gpus.empty() ? Json("no CUDA GPU: " + report.reason) : Json(nullptr);
  return document;
}

void print_text(const GpuReport& report) {
  if (report.gpus.empty()) {
    std::fprintf(stderr, "no CUDA GPU: %s\n", report.reason.c_str());
    return;
  }
  for (const GpuInfo& gpu : report.gpus) {
    std::cout << gpu.index << "  " << gpu.name << "  " << gpu.capability.name() << " (" << gpu.capability.major << "."
              << gpu.capability.minor << ")  " << human_size(gpu.memory_bytes) << "  " << gpu.uuid << '\n';
  }
  std::cout << "driver: CUDA " << cuda_version_name(report.driver_version) << '\n';
}

}  // namespace

Action add_gpus(CLI::App& root) {
  auto* command = root.add_subcommand(
      "gpus",
      "List the CUDA GPUs of this machine: index, name, compute capability (sm_90), memory, UUID and\n"
      "the driver's CUDA version. No GPU or no driver is not an error: exit 0, the reason on stderr.");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "One JSON document on stdout (an empty \"gpus\" list and a \"reason\" without GPUs)");
  return [json] {
    const GpuReport report = discover_gpus();
    if (*json) print_json(to_json(report));
    else print_text(report);
    return 0;
  };
}

}  // namespace ptb::app
