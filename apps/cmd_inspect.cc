// `ptbundle inspect PATH... [--json] [--sha256]`: what is inside programs,
// data files, bundled programs, AOTInductor packages and bundle folders.
// The facts, the GPU code of each library included, come from libbundle's
// inspect_path as a typed model (ptbundle/inspect/inspect_model.h); this file
// prints it as text or as one JSON document.
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>

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

// Prints each path's report as soon as it is inspected, and a bundle folder's
// parts one at a time (InspectOptions::each_part): memory stays that of one
// part however many parts a folder lists. The document is
// schemas/inspect.schema.json: {"ptbundle_inspect_version": 1, "files": [...]}
// inside the envelope. A bundle that fails after some of its parts were
// printed gets its error beside them ("error" in its entry).
class InspectPrinter {
 public:
  InspectPrinter(Output& out, bool sha256) : out_(out), sha256_(sha256) {}

  int run(const std::vector<std::string>& paths) {
    JsonWriter& json = out_.begin_stream();
    if (out_.json()) {
      json("ptbundle_inspect_version", 1);
      json.key("files");
      json.begin_array();
    }
    for (const auto& path : paths) {
      if (!one(json, path)) break;
    }
    if (out_.json()) json.end_array();
    return out_.end_stream(exit_code_);
  }

 private:
  // False once an input changed while it was read: nothing more is inspected.
  bool one(JsonWriter& json, const std::string& path) {
    InspectOptions options;
    options.sha256 = sha256_;
    options.progress = out_.progress();
    bool started = false;  // the bundle's head is printed, its parts follow
    options.each_part = [&](const InspectedFile& bundle, InspectPart part) -> Status {
      if (auto changed = Output::changed_input()) return *changed;
      if (!started) begin_bundle(json, bundle);
      started = true;
      if (out_.json()) {
        json.element();
        json.value(part);
      } else {
        out_.text() << render_bundle_text_part(part, sha256_);
      }
      return {};
    };
    Result<InspectedFile> inspected = inspect_path(path, options);
    const std::optional<Error> changed = Output::changed_input();
    if (inspected.ok() && !changed) {
      if (started) end_bundle(json, &*inspected, nullptr);
      else print_file(json, *inspected);
      return true;
    }
    // What went wrong may be only a symptom of an input that shrank under us.
    std::vector<Error> errors;
    if (changed) errors.push_back(*changed);
    if (!inspected.ok() && (!changed || changed->message != inspected.error().message)) errors.push_back(inspected.error());
    for (const Error& error : errors) out_.error_line(error);
    const FileErrorModel model{errors.front()};
    if (exit_code_ == 0) exit_code_ = static_cast<int>(model.error.kind);
    if (started) {
      end_bundle(json, nullptr, &model);
    } else if (out_.json()) {
      json.element();
      json.value(FileModel{path, std::nullopt, model});
    }
    return !changed;
  }

  void separate() {
    if (!first_) out_.text() << '\n';
    first_ = false;
  }

  void print_file(JsonWriter& json, const InspectedFile& file) {
    if (out_.json()) {
      json.element();
      json.value(file);
      return;
    }
    separate();
    out_.text() << render_inspect_text(file, sha256_);
  }

  // The members of the bundle's entry before "parts", then "parts" opened:
  // written through InspectedFile::fields, so the order is the model's.
  void begin_bundle(JsonWriter& json, const InspectedFile& bundle) {
    if (!out_.json()) {
      separate();
      out_.text() << render_bundle_text_head(bundle);
      return;
    }
    json.element();
    json.begin_object();
    Members before{json, Members::Before};
    bundle.fields(before);
    json.key("parts");
    json.begin_array();
  }

  // Closes "parts" and adds the members after it, or the error that stopped
  // the bundle.
  void end_bundle(JsonWriter& json, const InspectedFile* bundle, const FileErrorModel* error) {
    if (!out_.json()) {
      if (bundle) out_.text() << render_bundle_text_tail(*bundle);
      return;
    }
    json.end_array();
    if (bundle) {
      Members after{json, Members::After};
      bundle->fields(after);
    } else {
      json("error", *error);
    }
    json.end_object();
  }

  // The members of a bundle folder's entry before "parts" or after it.
  struct Members {
    enum Side { Before, After };
    JsonWriter& json;
    Side side;
    bool past_parts = false;
    template <class T>
    Members& operator()(std::string_view key, const T& value) {
      if (key == "parts") {
        past_parts = true;
      } else if (past_parts == (side == After)) {
        json(key, value);
      }
      return *this;
    }
  };

  Output& out_;
  bool sha256_;
  int exit_code_ = 0;
  bool first_ = true;
};

int run_inspect(const InspectArgs& args, Output& out) { return InspectPrinter(out, args.sha256).run(args.paths); }

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
