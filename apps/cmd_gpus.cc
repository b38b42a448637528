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

namespace ptb {

// Text for people. In namespace ptb, beside GpuReport, so that Output::print
// finds it by argument-dependent lookup.
void render_text(std::ostream& out, const GpuReport& report) {
  if (report.gpus.empty()) {
    std::fprintf(stderr, "no CUDA GPU: %s\n", report.reason.c_str());
    return;
  }
  for (const GpuInfo& gpu : report.gpus) {
    out << gpu.index << "  " << gpu.name << "  " << gpu.capability.name() << " (" << gpu.capability.major << "."
        << gpu.capability.minor << ")  " << app::human_size(gpu.memory_bytes) << "  " << gpu.uuid << '\n';
  }
  out << "driver: CUDA " << (report.driver_version ? cuda_version_name(report.driver_version) : "unknown") << '\n';
}

}  // namespace ptb

namespace ptb::app {

Command add_gpus(Cli& cli) {
  CommandLine command = cli.add_command(
      "gpus",
      "List the CUDA GPUs of this machine: index, name, compute capability (sm_90), memory, UUID and\n"
      "the driver's CUDA version. No GPU or no driver is not an error: exit 0, the reason on stderr.");
  command.json_flag("One JSON document on stdout (an empty \"gpus\" list and a \"reason\" without GPUs),\n"
                              "described by schemas/gpus.schema.json");
  return {command, [](Output& out) { return out.print(discover_gpus()); }};
}

}  // namespace ptb::app
