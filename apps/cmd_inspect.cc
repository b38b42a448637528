// `ptbundle inspect PATH... [--json] [--sha256]`: what is inside programs,
// data files, bundled programs, AOTInductor packages and bundle folders.
// The facts, the GPU code of each library included, come from libbundle's
// inspect_path as a typed model (ptbundle/inspect/inspect_model.h); this file
// prints it as text or as one JSON document.
#include <cstdio>
#include <memory>
#include <optional>
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

// Why a path could not be inspected, recorded in its place.
struct FileErrorModel {
  Error error;
  template <class F>
  void fields(F& f) const {
    f("kind", error_kind_name(error.kind))("exit_code", static_cast<int>(error.kind))("message", error.message);
  }
};

// One path: what libbundle's inspect_path found, or its error.
struct FileModel {
  std::string path;
  std::optional<InspectedFile> file;
  std::optional<FileErrorModel> error;
  template <class F>
  void fields(F& f) const {
    if (file) {
      file->fields(f);
      return;
    }
    f("path", path)("error", *error);
  }
};

// The model: schemas/inspect.schema.json.
struct InspectModel {
  std::vector<FileModel> files;
  bool sha256 = false;  // text only: the sha256 columns
  template <class F>
  void fields(F& f) const {
    f("ptbundle_inspect_version", 1)("files", files);
  }
};

void render_text(std::ostream& out, const InspectModel& model) {
  bool first = true;
  for (const FileModel& file : model.files) {
    if (!file.file) continue;  // its error went to stderr
    if (!first) out << '\n';
    out << render_inspect_text(*file.file, model.sha256);
    first = false;
  }
}

int run_inspect(const InspectArgs& args, Output& out) {
  InspectOptions options;
  options.sha256 = args.sha256;
  options.progress = out.progress();
  InspectModel model;
  model.sha256 = args.sha256;
  int exit_code = 0;
  for (const auto& path : args.paths) {
    auto inspected = inspect_path(path, options);
    if (inspected.ok()) {
      model.files.push_back({path, std::move(inspected).value(), std::nullopt});
      continue;
    }
    // The error goes to stderr either way; JSON also records it in place.
    const Error& error = inspected.error();
    out.error_line(error);
    if (exit_code == 0) exit_code = static_cast<int>(error.kind);
    model.files.push_back({path, std::nullopt, FileErrorModel{error}});
  }
  return out.print(model, exit_code);
}

}  // namespace

Command add_inspect(Cli& cli) {
  CommandLine command = cli.add_command(
      "inspect",
      "Show what is inside ExecuTorch programs (.pte), data files (.ptd), bundled programs (.bpte),\n"
      "AOTInductor packages (.pt2) and bundle folders: methods with their inputs, outputs, operators\n"
      "and delegates (compile specs, decoded CUDA payloads, the GPU code of each library), segments\n"
      "and named data with sizes and alignment. Every file is checked as it is read; the exit code\n"
      "is that of the first file that fails. See ptbundle-inspect(1).");
  auto args = std::make_shared<InspectArgs>();
  command.option("PATH", args->paths, "Files or bundle folders to inspect").required();
  command.json_flag("One JSON document on stdout: {\"ptbundle_inspect_version\": 1, \"files\": [...]}, described by\n"
                    "schemas/inspect.schema.json");
  command.flag("--sha256", args->sha256, "Add the SHA-256 of every file, segment, blob and delegate payload");
  return {command, [args](Output& out) { return run_inspect(*args, out); }};
}

}  // namespace ptb::app
