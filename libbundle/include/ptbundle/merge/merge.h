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
// libbundle cannot read kernels (libcuda does, and depends on libbundle), so
// what a library's kernels say comes in through `LibraryScan`, supplied by
// the caller (libexport's merge_library_scan() wraps libcuda's scanner).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/base/file.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/base/result.h"

namespace ptb {

// One export: a .pte and, when its weights live outside, its .ptd.
struct MergeSource {
  std::string pte_path;
  std::string ptd_path;  // empty: none
};

// The GPU code found in one shared library.
struct LibraryKernels {
  std::vector<uint32_t> cubin_sms;  // 80 for an sm_80 cubin
  std::vector<uint32_t> ptx_sms;    // 75 for compute_75 PTX
};
// `name` identifies the library in errors ("a.pte: named data '<key>'").
using LibraryScan = std::function<Result<LibraryKernels>(Bytes library, const std::string& name)>;

struct MergeRequest {
  std::vector<MergeSource> inputs;
  std::optional<MergeSource> fallback;
  std::string output_pte;
  // Required when the inputs have data files, refused when they have none.
  std::string output_ptd;
  // Optional. With it, a regular input whose library holds PTX but no cubin
  // is refused (it belongs behind --fallback), and a fallback whose library
  // holds no PTX is refused.
  LibraryScan scan_library;
  // Threads comparing weights; 0: one per core, at most 4.
  unsigned threads = 0;
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
};

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
  LibraryScan scan_library;          // required: single-blob parts are named by their kernels
  unsigned threads = 0;
  std::string tool_version;  // recorded as ptbundle_version
};

enum class PartMergeLayout { Identical, MultiVariant, PerTarget };
const char* part_merge_layout_name(PartMergeLayout layout);  // "identical", "multi_variant", "per_target"

struct MergedPart {
  std::string name;
  PartMergeLayout layout = PartMergeLayout::Identical;
  // Per CUDA delegate, each variant (multi_variant) or each target's program
  // (per_target); source_pte is the input file it came from.
  std::vector<VariantOrigin> provenance;
};

struct BundleMergeResult {
  std::string output_dir;
  std::vector<MergedPart> parts;
  Manifest manifest;  // as written
};

Result<BundleMergeResult> merge_bundles(const BundleMergeRequest& request);

}  // namespace ptb
