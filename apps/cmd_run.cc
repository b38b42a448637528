// `ptbundle run BUNDLE [--part P] [--method M] [--input NAME=FILE.npy ...]
// [--random] [--output-dir DIR] [--warmup N] [--iterations N] [--json]`:
// one part on the GPU through the runtime that serves it, with trtexec-style timing. The work is
// libcuda's run_part (run.h); this file parses options and prints the report.
#include <cstdio>
#include <memory>
#include <ostream>

#include "command.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/runtime_choice.h"

namespace ptb::app {

std::string ms_text(double ms) {
  char text[32];
  if (ms < 1) std::snprintf(text, sizeof text, "%.1f us", ms * 1000);
  else std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

}  // namespace ptb::app

namespace ptb {

// Text for people. In namespace ptb, beside RunReport, so that Output::print
// finds it by argument-dependent lookup.
void render_text(std::ostream& out, const RunReport& r) {
  out << "part " << r.part << " (" << r.source << "), method " << r.method << ", on GPU " << r.device.index << " "
      << r.device.name << " (" << r.device.capability.name() << ")\n";
  out << "checked: " << r.checked.what << '\n';
  out << "runtime: " << r.runtime.name << " (" << r.runtime.reason << ")\n";
  if (!r.load.libraries.empty()) out << "libraries: " << r.load.libraries << '\n';
  out << "variant: " << r.variant << '\n';
  if (!r.kernels.empty()) out << "kernels: " << r.kernels << '\n';
  const LoadTimes& load = r.load;
  char rate[64] = "";
  if (load.weight_bytes) std::snprintf(rate, sizeof rate, " at %.2f GB/s", load.upload_gb_per_second());
  out << "load: read " << app::ms_text(load.read_ms) << ", library " << app::ms_text(load.library_ms) << ", create "
      << app::ms_text(load.create_ms) << ", weights " << app::ms_text(load.weights_ms) << " (" << app::human_size(load.weight_bytes)
      << " " << weights_layout_name(r.weights_layout) << rate << "), total " << app::ms_text(load.total_ms()) << '\n';
  if (load.weight_bytes) out << "upload: " << load.upload_method << '\n';
  for (const RunTensor& t : r.inputs) {
    out << "input " << t.index << " " << t.name << ": " << tensor_text(t.scalar_type, t.shape) << " from " << t.file
        << '\n';
  }
  for (const RunTensor& t : r.outputs) {
    out << "output " << t.index << " " << t.name << ": " << tensor_text(t.scalar_type, t.shape)
        << (t.file.empty() ? "" : " -> " + t.file) << '\n';
  }
  if (r.verdict) out << "check: " << *r.verdict << '\n';
  out << "first call: " << app::ms_text(r.first_call_ms);
  if (r.next_call_ms) out << " (the next " << kNextCalls << ": median " << app::ms_text(*r.next_call_ms) << ")";
  out << "; choices: " << r.tuning.from_file << " from " << (r.tuning.file.empty() ? "no tune file" : r.tuning.file)
      << ", " << r.tuning.searched << " searched\n";
  if (r.timing) {
    const TimingStats& s = *r.timing;
    char calls[48];
    std::snprintf(calls, sizeof calls, "%.0f calls/s", s.calls_per_second);
    char cv[32];
    std::snprintf(cv, sizeof cv, "%.1f%%", s.coefficient_of_variation * 100);
    out << "timing: " << s.count << " calls after " << r.warmup << " warm-up (CUDA events): min " << app::ms_text(s.min_ms)
        << ", median " << app::ms_text(s.median_ms) << ", p90 " << app::ms_text(s.p90_ms) << ", p99 " << app::ms_text(s.p99_ms)
        << ", max " << app::ms_text(s.max_ms) << ", mean " << app::ms_text(s.mean_ms) << "; " << calls << "; CV " << cv << '\n';
  }
  if (r.graphs.requested) {
    out << "cuda graph: " << (r.graphs.active ? "calls replay a captured graph" : "off: " + r.graphs.why_not) << '\n';
  }
}

}  // namespace ptb

namespace ptb::app {
namespace {


int run_command(const RunRequest& request, Output& out) {
  auto report = run_part(request);
  if (!report.ok()) return out.fail(report.error());
  for (const auto& warning : report->warnings) std::fprintf(stderr, "ptbundle: warning: %s\n", warning.c_str());
  if (!report->passed()) {
    return out.print(*report, static_cast<int>(ErrorKind::Invalid), {invalid(report->verdict.value_or(""))});
  }
  return out.print(*report);
}

}  // namespace

Command add_run(Cli& cli) {
  CommandLine command = cli.add_command(
      "run",
      "Run one part of a bundle (or a .pte with its .ptd, or an AOTInductor .pt2 compiled with\n"
      "ExecuTorch's options) on the GPU, without PyTorch: libraries compiled with link_libtorch=False\n"
      "run on the built-in AOTInductor runtime, others through LibTorch. A bundle's part is first\n"
      "checked as verify checks it (sizes, SHA-256, content keys), before any GPU is looked for. Inputs\n"
      "come from .npy files checked against the method's signature, or are random; outputs are\n"
      "written as .npy. Then times --iterations calls after --warmup with CUDA events.");
  auto request = std::make_shared<RunRequest>();
  auto pageable = std::make_shared<bool>(false);
  auto runtime = std::make_shared<std::string>("auto");
  command.option("bundle", request->path, "Bundle folder, .pte, or .pt2 package").required();
  command.option("--part", request->part, "The part to run (needed when the bundle has several)");
  command.option("--method", request->method, "The method to run (default: the only one, else forward)");
  command.option("--input", request->inputs,
                      "NAME=FILE.npy (NAME: an index or the library's input name) or FILE.npy for the next input");
  command.flag("--random", request->random, "Random values for inputs not given (needs the method's signature)");
  command.option("--seed", request->seed,
                      "Seed for --random and for the program's own random draws (samplers): the same seed, the same "
                      "run (default 0)");
  command.option("--output-dir", request->output_dir, "Write each output as <part>.out<i>.npy into this folder");
  command.option("--expect", request->expects,
                      "NAME=FILE.npy: compare an output with expected values (exit 1 if it differs)");
  command.option("--atol", request->atol, "Absolute tolerance for --expect (default by dtype)");
  command.option("--rtol", request->rtol, "Relative tolerance for --expect (default by dtype)");
  command.option("--warmup", request->warmup, "Untimed calls before timing (default 10)");
  command.option("--iterations", request->iterations, "Timed calls (default 100; 0: no timing)");
  command.option("--device", request->device, "CUDA device index (default 0)");
  command.flag("--pageable-upload", *pageable,
                    "Upload weights with plain cudaMemcpy instead of pinned staging buffers (to compare)");
  command.flag("--cuda-graph", request->cuda_graphs,
                    "Capture the call into a CUDA graph after the first call and replay it (inputs keep their "
                    "shape); the report says if the program cannot be captured, and why");
  auto no_tune = std::make_shared<bool>(false);
  command.flag("--no-tune", *no_tune,
               "Ignore the bundle's tune file: search every GEMM's and convolution's algorithm at its first call "
               "(to compare; ptbundle tune records them)");
  command.option("--runtime", *runtime,
                      "auto (default: built-in unless the library needs LibTorch), builtin or libtorch");
  command.json_flag("One JSON document on stdout, described by schemas/run.schema.json");
  return {command, [request, pageable, runtime, no_tune](Output& out) {
            RunRequest given = *request;
            given.staged_upload = !*pageable;
            given.use_tune_file = !*no_tune;
            const std::optional<AotiRuntime> chosen = parse_aoti_runtime(*runtime);
            if (!chosen) return out.fail(usage_error("--runtime " + *runtime + ": expected auto, builtin or libtorch"));
            given.runtime = *chosen;
            return run_command(given, out);
          }};
}

}  // namespace ptb::app
