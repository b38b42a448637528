// `ptbundle merge`: exports of one program for different GPUs into one.
//   ptbundle merge -o OUT.pte [--output-data OUT.ptd] IN.pte[,IN.ptd]... [--fallback F.pte[,F.ptd]] [--json]
//   ptbundle merge -o OUT_DIR BUNDLE...
// Parsing and printing only; the rules live in libbundle (merge.h).
// Inputs that are folders are bundles; inputs that are files are programs.
#include <filesystem>
#include <iostream>

#include "command.h"
#include "ptbundle/merge/merge.h"
#include "ptbundle/export/merge_scan.h"

namespace ptb::app {
namespace {

// The version of the --json documents (schemas/merge.schema.json).
constexpr int kMergeJsonVersion = 1;

struct MergeOptions {
  std::string output;
  std::string output_data;
  std::vector<std::string> inputs;
  std::string fallback;
  bool json = false;
  unsigned threads = 0;
};

// "a.pte,a.ptd" -> both; "a.pte" -> no data file. The comma before a name
// ending in .ptd splits, so that other commas in paths survive.
MergeSource parse_source(const std::string& text) {
  auto comma = text.rfind(',');
  if (comma != std::string::npos && comma + 1 < text.size()) {
    std::string data = text.substr(comma + 1);
    if (data.size() > 4 && data.compare(data.size() - 4, 4, ".ptd") == 0) return {text.substr(0, comma), data};
  }
  return {text, ""};
}

Json provenance_json(const std::vector<VariantOrigin>& origins);

void print_table(const MergeResult& result) {
  std::vector<std::array<std::string, 4>> rows = {{"delegate", "kind", "target", "source"}};
  for (const VariantOrigin& origin : result.provenance) {
    std::string source = origin.source_pte + (origin.kind == VariantKind::PtxFallback ? " [fallback]" : "");
    rows.push_back({origin.delegate(), variant_kind_name(origin.kind), origin.target(), source});
  }
  std::array<size_t, 4> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < 4; ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < 4; ++c) {
      line += row[c];
      if (c + 1 < 4) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

Json result_json(const MergeResult& result) {
  Json variants = Json::array();
  for (const CudaVariant& v : result.variants) {
    variants.push_back({{"target_sm", v.target_sm}, {"ptx_compute", v.ptx_compute}, {"fallback_only", v.fallback_only}});
  }
  Json outputs = {{"pte", result.output_pte}};
  outputs["ptd"] = result.output_ptd.empty() ? Json(nullptr) : Json(result.output_ptd);
  return {{"ptbundle_merge_version", kMergeJsonVersion},
          {"outputs", outputs},
          {"variants", variants},
          {"provenance", provenance_json(result.provenance)},
          {"weights", {{"count", result.weight_count}, {"bytes", result.weight_bytes}}},
          {"compared_bytes", result.compared_bytes},
          {"removed_signatures", result.removed_signatures}};
}

int run_file_merge(const MergeOptions& options) {
  MergeRequest request;
  for (const std::string& input : options.inputs) request.inputs.push_back(parse_source(input));
  if (!options.fallback.empty()) request.fallback = parse_source(options.fallback);
  request.output_pte = options.output;
  request.output_ptd = options.output_data;
  request.scan_library = merge_library_scan();
  request.threads = options.threads;
  auto result = merge_programs(request);
  if (!result) return report(result.error());
  report_removed_signatures(result->removed_signatures);
  if (options.json) {
    print_json(result_json(*result));
  } else {
    print_table(*result);
    std::fprintf(stderr, "ptbundle: wrote %s%s%s (%zu variants per CUDA delegate)\n", result->output_pte.c_str(),
                 result->output_ptd.empty() ? "" : " and ", result->output_ptd.c_str(), result->variants.size());
  }
  return 0;
}

void print_bundle_table(const BundleMergeResult& result) {
  std::vector<std::array<std::string, 6>> rows = {{"part", "layout", "delegate", "kind", "target", "source"}};
  for (const MergedPart& part : result.parts) {
    if (part.provenance.empty()) rows.push_back({part.name, part_merge_layout_name(part.layout), "-", "-", "-", "-"});
    for (const VariantOrigin& origin : part.provenance) {
      rows.push_back({part.name, part_merge_layout_name(part.layout), origin.delegate(), variant_kind_name(origin.kind),
                      origin.target(), origin.source_pte});
    }
  }
  std::array<size_t, 6> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

Json provenance_json(const std::vector<VariantOrigin>& origins) {
  Json out = Json::array();
  for (const VariantOrigin& origin : origins) {
    out.push_back({{"delegate", origin.delegate()},
                   {"method", origin.method},
                   {"delegate_index", origin.delegate_index},
                   {"kind", variant_kind_name(origin.kind)},
                   {"target", origin.target()},
                   {"target_sm", origin.target_sm},
                   {"ptx_compute", origin.ptx_compute},
                   {"library_key", origin.so_key},
                   {"library_size", origin.so_size},
                   {"source", origin.source_pte},
                   {"from_fallback_option", origin.from_fallback_option}});
  }
  return out;
}

int run_bundle_merge(const MergeOptions& options) {
  if (!options.output_data.empty() || !options.fallback.empty()) {
    return report(usage_error("merge: --output-data and --fallback are for merging .pte files, not bundle folders"));
  }
  BundleMergeRequest request;
  request.bundles = options.inputs;
  request.output_dir = options.output;
  request.scan_library = merge_library_scan();
  request.threads = options.threads;
  request.tool_version = PTB_VERSION;
  auto result = merge_bundles(request);
  if (!result) return report(result.error());
  if (options.json) {
    Json parts = Json::array();
    for (const MergedPart& part : result->parts) {
      parts.push_back({{"name", part.name},
                       {"layout", part_merge_layout_name(part.layout)},
                       {"provenance", provenance_json(part.provenance)}});
    }
    print_json({{"ptbundle_merge_version", kMergeJsonVersion},
                {"output_dir", result->output_dir},
                {"parts", parts},
                {"manifest", manifest_to_json(result->manifest)}});
  } else {
    print_bundle_table(*result);
    std::fprintf(stderr, "ptbundle: wrote the bundle %s (%zu parts)\n", result->output_dir.c_str(), result->parts.size());
  }
  return 0;
}

// Bundle folders or .pte files; a mixture is a mistake worth naming.
int run_merge(const MergeOptions& options) {
  size_t folders = 0;
  for (const std::string& input : options.inputs) {
    std::error_code ec;
    folders += std::filesystem::is_directory(input, ec) ? 1 : 0;
  }
  if (folders == 0) return run_file_merge(options);
  if (folders == options.inputs.size()) return run_bundle_merge(options);
  return report(usage_error("merge: " + std::to_string(folders) + " of " + std::to_string(options.inputs.size()) +
                            " inputs are folders; expected bundle folders only, or .pte files only"));
}

}  // namespace

Action add_merge(CLI::App& root) {
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
  command->add_flag("--json", options->json, "Print the result as one JSON document");
  command->add_option("--threads", options->threads, "Threads comparing weights (default: one per core, at most 4)");
  return [options] { return run_merge(*options); };
}

}  // namespace ptb::app
