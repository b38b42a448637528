// `ptbundle tune BUNDLE [--part P]... [--input NAME=FILE.npy ...] [--retune]
// [--device N] [--json]`: records the built-in runtime's choices on this GPU
// into the bundle's tune file. Parsing and printing only; the work is
// libcuda's tune_bundle (tune.h).
#include <memory>
#include <ostream>

#include "command.h"
#include "ptbundle/cuda/tune.h"

namespace ptb {

// Text for people, beside TuneReport, so that Output::print finds it by
// argument-dependent lookup.
void render_text(std::ostream& out, const TuneReport& r) {
  out << "tuned " << r.parts.size() << " part(s) of " << r.bundle << " on GPU " << r.device.index << " "
      << r.device.name << " (" << r.device.capability.name() << ") with " << r.runtime << '\n';
  for (const TunedPart& part : r.parts) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f ms", part.first_call_ms);
    out << "  part " << part.name << ": first call " << ms << " on its " << part.inputs << '\n';
  }
  out << "choices: " << r.searched << " searched, " << r.recorded << " from the tune file"
      << (r.retune ? " (--retune: none taken)" : "") << "; " << r.choices << " recorded for this GPU, " << r.total
      << " in all, in " << r.bundle << "/" << r.file << '\n';
}

}  // namespace ptb

namespace ptb::app {

Command add_tune(Cli& cli) {
  auto request = std::make_shared<TuneRequest>();
  CommandLine command = cli.add_command(
      "tune",
      "Run each part of a bundle on this machine's GPU with its recorded test case (or --input) and record\n"
      "the choices the built-in runtime made (each GEMM's cuBLASLt algorithm, each convolution's cuDNN\n"
      "engine and route) for this GPU in the bundle's tune file, which bundle.json lists with its digest.\n"
      "run and the robot API then take them instead of searching at the first call. A signed bundle is\n"
      "refused: tune before sign. See ptbundle-tune(1).");
  command.option("BUNDLE", request->bundle, "The bundle folder").required();
  command.option("--part", request->parts, "A part to tune (repeatable; default: every part)");
  command.option("--input", request->inputs,
                 "NAME=FILE.npy or FILE.npy, as run takes them, instead of the part's test case (one part)");
  command.flag("--retune", request->retune,
               "Search every shape again, ignoring the choices the tune file holds for this GPU");
  command.option("--device", request->device, "CUDA device index (default 0)");
  command.json_flag("One JSON document on stdout, described by schemas/tune.schema.json");
  return {command, [request](Output& out) {
            TuneRequest given = *request;
            given.tool_version = PTB_VERSION;
            auto report = tune_bundle(given);
            if (!report.ok()) return out.fail(report.error());
            out.committed();
            return out.print(*report);
          }};
}

}  // namespace ptb::app
