// `ptbundle inspect PATH... [--json] [--sha256]`: what is inside programs,
// data files, bundled programs, AOTInductor packages and bundle folders.
// The facts, the GPU code of each library included, come from libbundle's
// inspect_path; this file prints text or one JSON document.
#include <iostream>
#include <memory>

#include "command.h"
#include "inspect_text.h"
#include "ptbundle/inspect/inspect.h"

namespace ptb::app {
namespace {

constexpr int kInspectFormatVersion = 1;

struct InspectArgs {
  std::vector<std::string> paths;
  bool json = false;
  bool sha256 = false;
};

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage:
      return "usage";
    case ErrorKind::Io:
      return "io";
    default:
      return "invalid";
  }
}

int run_inspect(const InspectArgs& args) {
  InspectOptions options;
  options.sha256 = args.sha256;
  Json files = Json::array();
  int exit_code = 0;
  bool first = true;
  for (const auto& path : args.paths) {
    auto inspected = inspect_path(path, options);
    if (!inspected.ok()) {
      // The error goes to stderr either way; JSON also records it in place.
      int code = report(inspected.error());
      if (exit_code == 0) exit_code = code;
      if (args.json) {
        Json failed;
        failed["path"] = path;
        failed["error"] = {{"kind", error_kind_name(inspected.error().kind)},
                           {"exit_code", code},
                           {"message", inspected.error().message}};
        files.push_back(std::move(failed));
      }
      continue;
    }
    if (args.json) {
      files.push_back(std::move(inspected).value());
    } else {
      if (!first) std::cout << '\n';
      std::cout << render_inspect_text(*inspected, args.sha256);
      first = false;
    }
  }
  if (args.json) {
    Json document;
    document["ptbundle_inspect_version"] = kInspectFormatVersion;
    document["files"] = std::move(files);
    print_json(document);
  }
  std::cout.flush();
  if (!std::cout) return report(io_error("stdout: cannot write the report"));
  return exit_code;
}

}  // namespace

Action add_inspect(CLI::App& root) {
  auto* command = root.add_subcommand(
      "inspect",
      "Show what is inside ExecuTorch programs (.pte), data files (.ptd), bundled programs (.bpte),\n"
      "AOTInductor packages (.pt2) and bundle folders: methods with their inputs, outputs, operators\n"
      "and delegates (compile specs, decoded CUDA payloads, the GPU code of each library), segments\n"
      "and named data with sizes and alignment. Every file is checked as it is read; the exit code\n"
      "is that of the first file that fails. See ptbundle-inspect(1).");
  auto args = std::make_shared<InspectArgs>();
  command->add_option("PATH", args->paths, "Files or bundle folders to inspect")->required();
  command->add_flag("--json", args->json,
                    "One JSON document on stdout: {\"ptbundle_inspect_version\": 1, \"files\": [...]}, described by\n"
                    "schemas/inspect.schema.json");
  command->add_flag("--sha256", args->sha256, "Add the SHA-256 of every file, segment, blob and delegate payload");
  return [args] { return run_inspect(*args); };
}

}  // namespace ptb::app
