// `ptbundle inspect PATH... [--json] [--sha256]`: what is inside programs,
// data files, bundled programs, AOTInductor packages and bundle folders.
// The facts, the GPU code of each library included, come from libbundle's
// inspect_path; this file prints text or one JSON document.
#include <cstdio>
#include <memory>
#include <ostream>

#include "command.h"
#include "inspect_text.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::app {
namespace {

struct InspectArgs {
  std::vector<std::string> paths;
  bool sha256 = false;
};

// The model: schemas/inspect.schema.json. Each file's object is built by
// libbundle's inspect_path, so it stays a Json value here.
struct InspectModel {
  std::vector<Json> files;
  std::vector<bool> failed;  // text only: per file, whether it is an error record
  bool sha256 = false;       // text only: the sha256 columns
  template <class F>
  void fields(F& f) const {
    f("ptbundle_inspect_version", 1)("files", files);
  }
};

void render_text(std::ostream& out, const InspectModel& model) {
  bool first = true;
  for (size_t i = 0; i < model.files.size(); ++i) {
    if (model.failed[i]) continue;  // its error went to stderr
    if (!first) out << '\n';
    out << render_inspect_text(model.files[i], model.sha256);
    first = false;
  }
}

int run_inspect(const InspectArgs& args, Output& out) {
  InspectOptions options;
  options.sha256 = args.sha256;
  InspectModel model;
  model.sha256 = args.sha256;
  int exit_code = 0;
  for (const auto& path : args.paths) {
    auto inspected = inspect_path(path, options);
    if (inspected.ok()) {
      model.files.push_back(std::move(inspected).value());
      model.failed.push_back(false);
      continue;
    }
    // The error goes to stderr either way; JSON also records it in place.
    const Error& error = inspected.error();
    const int code = static_cast<int>(error.kind);
    std::fprintf(stderr, "ptbundle: error: %s\n", printable(error.message).c_str());
    if (exit_code == 0) exit_code = code;
    model.files.push_back({{"path", path},
                           {"error", {{"kind", error_kind_name(error.kind)}, {"exit_code", code}, {"message", error.message}}}});
    model.failed.push_back(true);
  }
  return out.print(model, exit_code);
}

}  // namespace

Command add_inspect(CLI::App& root) {
  auto* command = root.add_subcommand(
      "inspect",
      "Show what is inside ExecuTorch programs (.pte), data files (.ptd), bundled programs (.bpte),\n"
      "AOTInductor packages (.pt2) and bundle folders: methods with their inputs, outputs, operators\n"
      "and delegates (compile specs, decoded CUDA payloads, the GPU code of each library), segments\n"
      "and named data with sizes and alignment. Every file is checked as it is read; the exit code\n"
      "is that of the first file that fails. See ptbundle-inspect(1).");
  auto args = std::make_shared<InspectArgs>();
  command->add_option("PATH", args->paths, "Files or bundle folders to inspect")->required();
  add_json_flag(command,
                    "One JSON document on stdout: {\"ptbundle_inspect_version\": 1, \"files\": [...]}, described by\n"
                    "schemas/inspect.schema.json");
  command->add_flag("--sha256", args->sha256, "Add the SHA-256 of every file, segment, blob and delegate payload");
  return {command, [args](Output& out) { return run_inspect(*args, out); }};
}

}  // namespace ptb::app
