// `ptbundle merge`: exports of one program for different GPUs into one.
//   ptbundle merge -o OUT.pte [--output-data OUT.ptd] IN.pte[,IN.ptd]... [--fallback F.pte[,F.ptd]] [--json]
//   ptbundle merge -o OUT_DIR BUNDLE...
// Parsing and printing only; the rules live in libbundle (merge.h).
// Inputs that are folders are bundles; inputs that are files are programs.
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "command.h"
#include "ptbundle/merge/merge.h"
#include "text_table.h"
#include "ptbundle/bundle/manifest_json.h"

namespace ptb {

// Text for people. In namespace ptb, beside the results, so that
// Output::print finds them by argument-dependent lookup.
void render_text(std::ostream& out, const MergeResult& result) {
  app::TextTable table({{"delegate"}, {"kind"}, {"target"}, {"source"}});
  for (const VariantOrigin& origin : result.provenance) {
    std::string source = origin.source_pte + (origin.kind == VariantKind::PtxFallback ? " [fallback]" : "");
    table.add({origin.delegate(), variant_kind_name(origin.kind), origin.target(), source});
  }
  for (const auto& line : table.lines("")) out << line << '\n';
}

void render_text(std::ostream& out, const BundleMergeResult& result) {
  app::TextTable table({{"part"}, {"layout"}, {"delegate"}, {"kind"}, {"target"}, {"source"}});
  for (const MergedPart& part : result.parts) {
    const std::string layout = part_merge_layout_name(part.layout);
    if (part.provenance.empty()) table.add({part.name, layout, "-", "-", "-", "-"});
    for (const VariantOrigin& origin : part.provenance)
      table.add({part.name, layout, origin.delegate(), variant_kind_name(origin.kind), origin.target(), origin.source_pte});
  }
  for (const auto& line : table.lines("")) out << line << '\n';
}

}  // namespace ptb

namespace ptb::app {
namespace {

struct MergeOptions {
  std::string output;
  std::string output_data;
  std::vector<std::string> inputs;
  std::string fallback;
  unsigned threads = 0;
  std::vector<std::string> keys;  // bundle inputs: public keys their signatures must verify with
};

int run_file_merge(const MergeOptions& options, Output& out) {
  MergeRequest request;
  for (const std::string& input : options.inputs) {
    auto source = parse_merge_source(input);
    if (!source) return out.fail(source.error());
    request.inputs.push_back(*source);
  }
  if (!options.fallback.empty()) {
    auto fallback = parse_merge_source(options.fallback);
    if (!fallback) return out.fail(fallback.error());
    request.fallback = *fallback;
  }
  request.output_pte = options.output;
  request.output_ptd = options.output_data;
  request.threads = options.threads;
  request.progress = out.progress();
  // Said even when this merge then fails: the earlier one's pair is whole again.
  if (!request.output_pte.empty()) {
    auto finished = finish_interrupted_merge(request.output_pte);
    if (!finished) return out.fail(finished.error());
    if (!finished->empty()) out.note(*finished);
  }
  auto result = merge_programs(request);
  if (!result) return out.fail(result.error());
  report_removed_signatures(out, result->removed_signatures);
  if (!out.json()) {
    out.note("wrote " + result->output_pte + (result->output_ptd.empty() ? "" : " and " + result->output_ptd) + " (" +
             std::to_string(result->variants.size()) + " variants per CUDA delegate)");
  }
  out.committed();
  return out.print(*result);
}

int run_bundle_merge(const MergeOptions& options, Output& out) {
  if (!options.output_data.empty() || !options.fallback.empty()) {
    return out.fail(usage_error("merge: --output-data and --fallback are for merging .pte files, not bundle folders"));
  }
  BundleMergeRequest request;
  for (const std::string& path : options.keys) {
    auto key = PublicKey::load(path);
    if (!key.ok()) return out.fail(key.error());
    request.keys.push_back(std::move(*key));
  }
  request.bundles = options.inputs;
  request.output_dir = options.output;
  request.threads = options.threads;
  request.tool_version = PTB_VERSION;
  request.progress = out.progress();
  auto result = merge_bundles(request);
  if (!result) return out.fail(result.error());
  if (!out.json()) {
    out.note("wrote the bundle " + result->output_dir + " (" + std::to_string(result->parts.size()) + " parts)");
  }
  out.committed();
  return out.print(*result);
}

// Bundle folders or .pte files; a mixture is a mistake worth naming.
int run_merge(const MergeOptions& options, Output& out) {
  size_t folders = 0;
  for (const std::string& input : options.inputs) {
    std::error_code ec;
    folders += std::filesystem::is_directory(input, ec) ? 1 : 0;
  }
  if (folders == 0 && !options.keys.empty())
    return out.fail(usage_error("merge: --key is for merging signed bundle folders; .pte files carry no signature"));
  if (folders == 0) return run_file_merge(options, out);
  if (folders == options.inputs.size()) return run_bundle_merge(options, out);
  return out.fail(usage_error("merge: " + std::to_string(folders) + " of " + std::to_string(options.inputs.size()) +
                            " inputs are folders; expected bundle folders only, or .pte files only"));
}

}  // namespace

Command add_merge(Cli& cli) {
  auto options = std::make_shared<MergeOptions>();
  CommandLine command = cli.add_command(
      "merge",
      "Merge exports of one program built for different GPUs into one program that carries every variant,\n"
      "or bundles of the same parts exported on different GPUs into one bundle (-o OUT_DIR BUNDLE...).\n"
      "The inputs must be the same program with identical weights; see ptbundle-merge(1).");
  command.option("-o,--output", options->output, "Output .pte, or output bundle folder").required();
  command.option("--output-data", options->output_data,
                      "Output .ptd: one copy of the weights (required when the inputs have data files)");
  command.option("inputs", options->inputs,
                      "IN.pte[,IN.ptd]: exports, each contributing its native variants; or bundle folders")
      .required();
  command.option("--fallback", options->fallback,
                      "F.pte[,F.ptd]: an export with exactly one PTX-capable variant, added as the runtime fallback");
  command.option("--key", options->keys,
                      "Bundles: public key (PEM) every input bundle must be signed with (repeatable; any one of them);\n"
                      "without it, a signed input is still checked against what its signature lists");
  command.json_flag("Print the result as one JSON document (schemas/merge.schema.json)");
  command.option("--threads", options->threads, "Threads comparing weights (default: one per core, at most 4)");
  return {command, [options](Output& out) { return run_merge(*options, out); }};
}

}  // namespace ptb::app
