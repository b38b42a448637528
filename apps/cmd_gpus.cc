// `ptbundle gpus [--json]`: the GPUs the driver reports. Having none is an
// answer, so the exit code is 0 either way: stdout lists the GPUs (nothing
// when there are none, so a script counting lines counts GPUs) and the reason
// there are none goes to stderr as "no CUDA GPU: <why>". With --json, stdout
// always carries one document whose "reason" says why "gpus" is empty
// (schemas/gpus.schema.json).
#include <cstdio>
#include <ostream>

#include "command.h"
#include "ptbundle/cuda/gpu.h"

namespace ptb::app {
namespace {

struct DriverModel {
  bool loaded = false;
  std::optional<std::string> cuda_version;
  template <class F>
  void fields(F& f) const {
    f("loaded", loaded)("cuda_version", cuda_version);
  }
};

struct GpuModel {
  int index = 0;
  std::string name;
  std::string compute_capability;  // "9.0"
  std::string sm;                  // "sm_90"
  std::string uuid;
  uint64_t memory_bytes = 0;
  template <class F>
  void fields(F& f) const {
    f("index", index)("name", name)("compute_capability", compute_capability)("sm", sm)("uuid", uuid)(
        "memory_bytes", memory_bytes);
  }
};

struct GpusModel {
  DriverModel driver;
  std::vector<GpuModel> gpus;
  std::optional<std::string> reason;  // "no CUDA GPU: ..." when there is none
  template <class F>
  void fields(F& f) const {
    f("driver", driver)("gpus", gpus)("reason", reason);
  }
};

GpusModel model_of(const GpuReport& report) {
  GpusModel model;
  model.driver.loaded = report.driver_loaded;
  if (report.driver_version) model.driver.cuda_version = cuda_version_name(report.driver_version);
  for (const GpuInfo& gpu : report.gpus) {
    model.gpus.push_back({gpu.index, gpu.name,
                          std::to_string(gpu.capability.major) + "." + std::to_string(gpu.capability.minor),
                          gpu.capability.name(), gpu.uuid, gpu.memory_bytes});
  }
  if (report.gpus.empty()) model.reason = "no CUDA GPU: " + report.reason;
  return model;
}

void render_text(std::ostream& out, const GpusModel& model) {
  if (model.gpus.empty()) {
    std::fprintf(stderr, "%s\n", model.reason.value_or("").c_str());
    return;
  }
  for (const GpuModel& gpu : model.gpus) {
    out << gpu.index << "  " << gpu.name << "  " << gpu.sm << " (" << gpu.compute_capability << ")  "
        << human_size(gpu.memory_bytes) << "  " << gpu.uuid << '\n';
  }
  out << "driver: CUDA " << model.driver.cuda_version.value_or("unknown") << '\n';
}

}  // namespace

Command add_gpus(CLI::App& root) {
  auto* command = root.add_subcommand(
      "gpus",
      "List the CUDA GPUs of this machine: index, name, compute capability (sm_90), memory, UUID and\n"
      "the driver's CUDA version. No GPU or no driver is not an error: exit 0, the reason on stderr.");
  add_json_flag(command, "One JSON document on stdout (an empty \"gpus\" list and a \"reason\" without GPUs),\n"
                              "described by schemas/gpus.schema.json");
  return {command, [](Output& out) { return out.print(model_of(discover_gpus())); }};
}

}  // namespace ptb::app
