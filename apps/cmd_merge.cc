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

// The models: schemas/merge.schema.json.
struct OriginModel {
  VariantOrigin origin;
  template <class F>
  void fields(F& f) const {
    f("delegate", origin.delegate())("method", origin.method)("delegate_index", origin.delegate_index)(
        "kind", std::string(variant_kind_name(origin.kind)))("target", origin.target())("target_sm", origin.target_sm)(
        "ptx_compute", origin.ptx_compute)("library_key", origin.so_key)("library_size", origin.so_size)(
        "source", origin.source_pte)("from_fallback_option", origin.from_fallback_option);
  }
};

std::vector<OriginModel> origins_of(const std::vector<VariantOrigin>& provenance) {
  std::vector<OriginModel> origins;
  for (const VariantOrigin& origin : provenance) origins.push_back({origin});
  return origins;
}

struct VariantModel {
  CudaVariant variant;
  template <class F>
  void fields(F& f) const {
    f("target_sm", variant.target_sm)("ptx_compute", variant.ptx_compute)("fallback_only", variant.fallback_only);
  }
};

struct OutputsModel {
  std::string pte;
  std::optional<std::string> ptd;  // none when the inputs keep their weights inside the .pte
  template <class F>
  void fields(F& f) const {
    f("pte", pte)("ptd", ptd);
  }
};

struct WeightsModel {
  uint64_t count = 0;
  uint64_t bytes = 0;
  template <class F>
  void fields(F& f) const {
    f("count", count)("bytes", bytes);
  }
};

struct ProgramMergeModel {
  OutputsModel outputs;
  std::vector<VariantModel> variants;
  std::vector<OriginModel> provenance;
  WeightsModel weights;
  uint64_t compared_bytes = 0;
  std::vector<std::string> removed_signatures;
  template <class F>
  void fields(F& f) const {
    f("ptbundle_merge_version", 1)("outputs", outputs)("variants", variants)("provenance", provenance)(
        "weights", weights)("compared_bytes", compared_bytes)("removed_signatures", removed_signatures);
  }
};

ProgramMergeModel model_of(const MergeResult& result) {
  ProgramMergeModel model;
  model.outputs.pte = result.output_pte;
  if (!result.output_ptd.empty()) model.outputs.ptd = result.output_ptd;
  for (const CudaVariant& variant : result.variants) model.variants.push_back({variant});
  model.provenance = origins_of(result.provenance);
  model.weights = {result.weight_count, result.weight_bytes};
  model.compared_bytes = result.compared_bytes;
  model.removed_signatures = result.removed_signatures;
  return model;
}

void render_text(std::ostream& out, const ProgramMergeModel& model) {
  TextTable table({{"delegate"}, {"kind"}, {"target"}, {"source"}});
  for (const OriginModel& row : model.provenance) {
    const VariantOrigin& origin = row.origin;
    std::string source = origin.source_pte + (origin.kind == VariantKind::PtxFallback ? " [fallback]" : "");
    table.add({origin.delegate(), variant_kind_name(origin.kind), origin.target(), source});
  }
  for (const auto& line : table.lines("")) out << line << '\n';
}

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
  // Said even when this merge then fails: the earlier one's pair is whole again.
  if (!request.output_pte.empty()) {
    auto finished = finish_interrupted_merge(request.output_pte);
    if (!finished) return out.fail(finished.error());
    if (!finished->empty()) std::fprintf(stderr, "ptbundle: %s\n", printable(*finished).c_str());
  }
  auto result = merge_programs(request);
  if (!result) return out.fail(result.error());
  report_removed_signatures(result->removed_signatures);
  if (!out.json()) {
    std::fprintf(stderr, "ptbundle: wrote %s%s%s (%zu variants per CUDA delegate)\n", result->output_pte.c_str(),
                 result->output_ptd.empty() ? "" : " and ", result->output_ptd.c_str(), result->variants.size());
  }
  out.committed();
  return out.print(model_of(*result));
}

struct MergedPartModel {
  std::string name;
  PartMergeLayout layout = PartMergeLayout::Identical;
  std::vector<OriginModel> provenance;
  template <class F>
  void fields(F& f) const {
    f("name", name)("layout", std::string(part_merge_layout_name(layout)))("provenance", provenance);
  }
};

struct BundleMergeModel {
  std::string output_dir;
  std::vector<MergedPartModel> parts;
  Json manifest;  // bundle.json as written (schemas/bundle.schema.json)
  template <class F>
  void fields(F& f) const {
    f("ptbundle_merge_version", 1)("output_dir", output_dir)("parts", parts)("manifest", manifest);
  }
};

BundleMergeModel model_of(const BundleMergeResult& result) {
  BundleMergeModel model;
  model.output_dir = result.output_dir;
  for (const MergedPart& part : result.parts) model.parts.push_back({part.name, part.layout, origins_of(part.provenance)});
  model.manifest = manifest_to_json(result.manifest);
  return model;
}

void render_text(std::ostream& out, const BundleMergeModel& model) {
  TextTable table({{"part"}, {"layout"}, {"delegate"}, {"kind"}, {"target"}, {"source"}});
  for (const MergedPartModel& part : model.parts) {
    const std::string layout = part_merge_layout_name(part.layout);
    if (part.provenance.empty()) table.add({part.name, layout, "-", "-", "-", "-"});
    for (const OriginModel& row : part.provenance) {
      const VariantOrigin& origin = row.origin;
      table.add({part.name, layout, origin.delegate(), variant_kind_name(origin.kind), origin.target(), origin.source_pte});
    }
  }
  for (const auto& line : table.lines("")) out << line << '\n';
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
  auto result = merge_bundles(request);
  if (!result) return out.fail(result.error());
  if (!out.json()) {
    std::fprintf(stderr, "ptbundle: wrote the bundle %s (%zu parts)\n", result->output_dir.c_str(), result->parts.size());
  }
  out.committed();
  return out.print(model_of(*result));
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

Command add_merge(CLI::App& root) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command = root.add_subcommand(
      "merge",
      "Merge exports of one program built for different GPUs into one program that carries every variant,\n"
      "or bundles of the same parts exported on different GPUs into one bundle (-o OUT_DIR BUNDLE...).\n"
      "The inputs must be the same program with identical weights; see ptbundle-merge(1).");
  command->add_option("-o,--output", options->output, "Output .pte, or output bundle folder")->required();
  command->add_option("--output-data", options->output_data,
                      "Output .ptd: one copy of the weights (required when the inputs have data files)");
  command->add_option("inputs", options->inputs,
                      "IN.pte[,IN.ptd]: exports, each contributing its native variants; or bundle folders")
      ->required();
  command->add_option("--fallback", options->fallback,
                      "F.pte[,F.ptd]: an export with exactly one PTX-capable variant, added as the runtime fallback");
  command->add_option("--key", options->keys,
                      "Bundles: public key (PEM) every input bundle must be signed with (repeatable; any one of them);\n"
                      "without it, a signed input is still checked against what its signature lists");
  add_json_flag(command, "Print the result as one JSON document (schemas/merge.schema.json)");
  command->add_option("--threads", options->threads, "Threads comparing weights (default: one per core, at most 4)");
  return {command, [options](Output& out) { return run_merge(*options, out); }};
}

}  // namespace ptb::app
