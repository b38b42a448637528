// Merging exports of one program built for different GPUs into one program
// that carries every variant (`ptbundle merge`).
//
// The rules follow ExecuTorch's backends/cuda/merge_ptes.py: the inputs must
// be the same program once the CUDA payloads and the `cuda_include_ptx` and
// `data_name` compile specs are set aside, with identical weights; each
// regular input contributes its native variants, one PTX-capable fallback
// may come from --fallback or from an input, and the output holds every
// variant's library plus one copy of the weights. Every check runs before
// anything is written; a refusal names the two files and the first
// difference.
//
// What a library's kernels say is read with libkernels' scan_kernels. Each
// input's data file is the one given after its comma (parse_program_argument),
// never one looked for beside it: the output's data file must be asked for
// with --output-data, so merge writes one only when the inputs name theirs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/base/result.h"
#include "ptbundle/signing/keys.h"

namespace ptb {

// One export: a .pte and, when its weights live outside, its .ptd.
struct MergeSource {
  std::string pte_path;
  std::string ptd_path;  // empty: none
};

// "IN.pte" or "IN.pte,IN.ptd", split by parse_program_argument.
Result<MergeSource> parse_merge_source(std::string_view argument);

struct MergeRequest {
  std::vector<MergeSource> inputs;
  std::optional<MergeSource> fallback;
  std::string output_pte;
  // Required when the inputs have data files, refused when they have none.
  std::string output_ptd;
  // A regular input whose library holds PTX but no cubin is refused (it
  // belongs behind --fallback), and a fallback whose library holds no PTX is
  // refused. Off, the inputs are taken as ExecuTorch's merge takes them.
  bool check_kernels = true;
  // Threads comparing weights; 0: one per core, at most 4.
  unsigned threads = 0;
  Progress progress;  // the inputs' bytes as they are hashed and compared
};

enum class VariantKind { Cubin, PtxFallback };
const char* variant_kind_name(VariantKind kind);  // "cubin", "ptx-fallback"

// Where one variant of one delegate of the output came from.
struct VariantOrigin {
  std::string method;
  uint32_t delegate_index = 0;
  VariantKind kind = VariantKind::Cubin;
  uint32_t target_sm = 0;
  uint32_t ptx_compute = 0;
  std::string so_key;
  uint64_t so_size = 0;
  std::string source_pte;
  bool from_fallback_option = false;  // given with --fallback, not inherited from an input

  std::string delegate() const;  // "forward[0]"
  std::string target() const;    // "sm80", or "compute_75 (source sm75)"

  // The report convention of every library report (inspect_model.h):
  // fields(F&) describes it to a printer; schemas/merge.schema.json.
  template <class F>
  void fields(F& f) const {
    f("delegate", delegate())("method", method)("delegate_index", delegate_index)("kind", variant_kind_name(kind))(
        "target", target())("target_sm", target_sm)("ptx_compute", ptx_compute)("library_key", so_key)(
        "library_size", so_size)("source", source_pte)("from_fallback_option", from_fallback_option);
  }
};

struct MergeResult {
  std::string output_pte;
  std::string output_ptd;  // empty when none was written
  std::vector<CudaVariant> variants;  // the set every CUDA delegate ends with
  std::vector<VariantOrigin> provenance;
  uint64_t weight_count = 0;           // distinct weight blobs checked
  uint64_t weight_bytes = 0;           // their total size
  uint64_t compared_bytes = 0;         // bytes read to prove inputs equal
  // Signatures of a bundle the outputs were written into, which they made invalid, removed.
  std::vector<std::string> removed_signatures;
  // What an earlier merge to the same program left, finished first (its
  // program renamed beside the data file it had put in place): "" if none.
  std::string finished_interrupted;

  struct Outputs {
    std::string pte;
    std::optional<std::string> ptd;  // none when the inputs keep their weights inside the .pte
    template <class F>
    void fields(F& f) const {
      f("pte", pte)("ptd", ptd);
    }
  };
  struct Weights {
    uint64_t count = 0;
    uint64_t bytes = 0;
    template <class F>
    void fields(F& f) const {
      f("count", count)("bytes", bytes);
    }
  };
  template <class F>
  void fields(F& f) const {
    const Outputs outputs{output_pte, output_ptd.empty() ? std::nullopt : std::optional(output_ptd)};
    f("ptbundle_merge_version", 1)("outputs", outputs)("variants", variants)("provenance", provenance)(
        "weights", Weights{weight_count, weight_bytes})("compared_bytes", compared_bytes)(
        "removed_signatures", removed_signatures);
  }
};

// What a merge to `output_pte` killed between its two renames left (see
// merge_programs), finished: "" when nothing was left, else what was done.
Result<std::string> finish_interrupted_merge(const std::string& output_pte);

// Checks the inputs, then writes output_pte (and output_ptd) atomically.
Result<MergeResult> merge_programs(const MergeRequest& request);

// ---- Bundle-level merge ------------------------------------------------------
//
// Bundles of the same parts exported on different GPUs become one bundle. A
// part whose programs carry the multi-variant payload is merged as above into
// one program; a part in ExecuTorch's older single-blob layout (no target in
// its payload; what `export` makes of an AOTInductor package) keeps one
// program per GPU target, named by the kernels found in its library, all
// sharing one copy of the identical weights; a part without CUDA delegates
// must be byte-identical in every bundle. The new bundle is assembled in a
// temporary folder beside OUT_DIR and renamed into place when complete.

struct BundleMergeRequest {
  std::vector<std::string> bundles;  // folders holding bundle.json
  std::string output_dir;            // must not exist, or be an empty folder
  unsigned threads = 0;
  std::string tool_version;  // recorded as ptbundle_version
  // Every input is checked as verify checks it before anything is merged
  // (check_bundle_unchanged): with keys, each must carry a signature one of
  // them verifies.
  std::vector<PublicKey> keys;
  Progress progress;  // the inputs' bytes as they are checked and compared, the outputs' as they are copied
};

enum class PartMergeLayout { Identical, MultiVariant, PerTarget };
const char* part_merge_layout_name(PartMergeLayout layout);  // "identical", "multi_variant", "per_target"

struct MergedPart {
  std::string name;
  PartMergeLayout layout = PartMergeLayout::Identical;
  // Per CUDA delegate, each variant (multi_variant) or each target's program
  // (per_target); source_pte is the input file it came from.
  std::vector<VariantOrigin> provenance;
  template <class F>
  void fields(F& f) const {
    f("name", name)("layout", part_merge_layout_name(layout))("provenance", provenance);
  }
};

struct BundleMergeResult {
  std::string output_dir;
  std::vector<MergedPart> parts;
  Manifest manifest;  // as written; reported as bundle.json (manifest_json.h)
  template <class F>
  void fields(F& f) const {
    f("ptbundle_merge_version", 1)("output_dir", output_dir)("parts", parts)("manifest", manifest);
  }
};

Result<BundleMergeResult> merge_bundles(const BundleMergeRequest& request);

}  // namespace ptb
