// `ptbundle export`: compiled parts into a bundle folder.
//   ptbundle export -o DIR --part NAME=SOURCE [--part ...] [--example PART=in.npy[,...]:out.npy[,...]]
//                   [--atol X --rtol Y] [--force] [--json]
// Parsing and printing only; the rules live in libexport (export.h).
#include <algorithm>
#include <ostream>

#include "command.h"
#include "ptbundle/export/export.h"

namespace ptb {

// Text for people. In namespace ptb, beside ExportReport, so that
// Output::print finds it by argument-dependent lookup.
void render_text(std::ostream& out, const ExportReport& report) {
  out << "exported " << report.parts.size() << (report.parts.size() == 1 ? " part" : " parts") << " into "
      << report.bundle_dir << " (" << report.manifest.parts.size() << " in " << kManifestFileName << ")\n";
  for (const ExportedPart& part : report.parts) {
    out << "  " << part.name << " (" << part.source_kind << (part.replaced ? ", replaced" : "") << "):";
    for (size_t i = 0; i < part.files.size(); ++i)
      out << (i ? "," : "") << " " << part.files[i].path << " " << app::human_size(part.files[i].size);
    out << '\n';
    for (const auto& note : part.notes) out << "    note: " << note << '\n';
  }
}

}  // namespace ptb

namespace ptb::app {
namespace {

struct ExportArgs {
  std::string output;
  std::vector<std::string> parts;
  std::vector<std::string> examples;
  std::optional<double> atol;  // unset: each output's own (results/tolerance.h)
  std::optional<double> rtol;
  bool force = false;
};

Result<ExportOptions> build_options(const ExportArgs& args) {
  ExportOptions options;
  options.output_dir = args.output;
  options.atol = args.atol;
  options.rtol = args.rtol;
  options.force = args.force;
  options.tool_version = PTB_VERSION;
  for (const auto& text : args.parts) {
    PTB_TRY(auto request, parse_part_argument(text));
    options.parts.push_back(std::move(request));
  }
  for (const auto& text : args.examples) {
    PTB_TRY(auto example, parse_example_argument(text));
    auto it = std::find_if(options.parts.begin(), options.parts.end(),
                           [&](const PartRequest& p) { return p.name == example.first; });
    if (it == options.parts.end())
      return usage_error("--example " + example.first + ": no --part of that name");
    if (it->example) return usage_error("--example " + example.first + ": given twice");
    it->example = std::move(example.second);
  }
  return options;
}

int run_export(const ExportArgs& args, Output& out) {
  auto options = build_options(args);
  if (!options) return out.fail(options.error());
  options->progress = out.progress();
  auto result = export_parts(*options);
  if (!result) return out.fail(result.error());
  report_removed_signatures(out, result->removed_signatures);
  out.committed();
  return out.print(*result);
}

}  // namespace

Command add_export(Cli& cli) {
  auto args = std::make_shared<ExportArgs>();
  CommandLine command = cli.add_command(
      "export",
      "Put compiled parts into a bundle folder, each with its own data file and data name.\n"
      "SOURCE is an ExecuTorch export (model.pte or model.pte,data.ptd) or an AOTInductor package (.pt2)\n"
      "compiled with ExecuTorch's CUDA options; see ptbundle-export(1).");
  command.option("-o,--output", args->output, "Bundle folder (created if missing; parts are added to a bundle)")
      .required();
  command.option("--part", args->parts, "NAME=SOURCE: a part and where it comes from (repeatable)").required();
  command.option("--example", args->examples,
                      "PART=in0.npy[,in1.npy...]:out0.npy[,...]: example inputs and expected outputs; required for a "
                      ".pt2 part, stored as the part's test case; nothing after ':' for a sampler (outputs checked by dtype, "
                      "shape and finiteness only; a .pt2 whose library draws noise takes given outputs as dtypes and "
                      "shapes only)");
  command.option("--atol", args->atol, "Absolute tolerance recorded for every test-case output (default: each output's own, "
                      "from its dtype and largest magnitude)")
      .non_negative();
  command.option("--rtol", args->rtol, "Relative tolerance recorded for every test-case output (default: by dtype)")
      .non_negative();
  command.flag("--force", args->force, "Replace parts of the same name, and stray files in their way");
  command.json_flag("Print the result as one JSON document (schemas/export.schema.json)");
  return {command, [args](Output& out) { return run_export(*args, out); }};
}

}  // namespace ptb::app
