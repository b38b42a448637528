// The pieces of `merge_programs`, shared between its files: the loaded
// exports, where a named blob lives, the byte comparer, and the checks.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/merge/merge.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {

// A blob's bytes and the mapped file that holds them.
struct Blob {
  Bytes bytes;
  const MappedFile* file = nullptr;
  uint64_t offset() const { return static_cast<uint64_t>(bytes.data() - file->bytes().data()); }
};

// One input: its program with its data, its CUDA delegates, and which
// named-data keys are CUDA's (libraries and weights) rather than the program's own.
struct Export {
  MergeSource source;
  bool fallback_option = false;
  // Shared: Blobs point into its mappings, which stay put when the Export moves.
  std::shared_ptr<const ProgramWithData> program;
  std::vector<CudaDelegate> cuda;  // each decoded
  std::set<std::string> library_keys;
  std::set<std::string> weight_keys;

  const std::string& name() const { return source.pte_path; }
  const PteFile& pte() const { return program->pte(); }
  const PtdFile* ptd() const { return program->ptd(); }
  // Where ExecuTorch's runtime finds `key` (find_named_bytes' order).
  std::optional<Blob> find_blob(std::string_view key) const;
  // The file holding `key`, for messages.
  std::string blob_file(std::string_view key) const;
};

// `multi_variant_only`: refuse CUDA payloads in the older forms, which record
// no target (file-level merge); bundle-level merge takes them.
Result<Export> load_export(const MergeSource& source, bool fallback_option, bool multi_variant_only = true);
// The same for a program already opened with its data file (bundle-level
// merge opens each program once and looks at it several ways).
Result<Export> export_of(const MergeSource& source, std::shared_ptr<const ProgramWithData> program, bool fallback_option,
                         bool multi_variant_only = true);


// ---- Proving bytes equal ----------------------------------------------------

// One reference range and the ranges that must equal it byte for byte.
struct CompareGroup {
  Blob reference;
  std::vector<Blob> candidates;  // each the size of `reference`
};

struct Mismatch {
  size_t group = 0;
  size_t candidate = 0;
  uint64_t offset = 0;
};

struct CompareStats {
  uint64_t bytes_read = 0;
  Progress progress;  // each compare_groups a step, "comparing weights"
};

// memcmp over mapped memory in slices, on `threads` threads, each slice's
// pages released from this process once compared so that memory stays flat
// at any size. Returns the first mismatch by (group, offset, candidate).
std::optional<Mismatch> compare_groups(const std::vector<CompareGroup>& groups, unsigned threads,
                                       CompareStats& stats);
std::optional<uint64_t> first_difference(Bytes a, Bytes b);  // sizes equal
unsigned comparison_threads(unsigned requested);

// ---- Checks -----------------------------------------------------------------

// Same program once CUDA payloads, `cuda_include_ptx` and `data_name` are set
// aside; same constants, mutable data, non-CUDA delegates, non-CUDA named
// data and non-CUDA external data; CUDA delegates in the same places.
Status check_same_program(const Export& reference, const Export& candidate, unsigned threads,
                          CompareStats& stats);

// The first difference between two execution plans after normalization, as
// "field path: a vs b", or nothing when they are equal.
std::optional<std::string> plan_difference(const fb::ExecutionPlan& a, const fb::ExecutionPlan& b);

// Weight checks: metadata now, bytes batched for one parallel pass.
class WeightCheck {
 public:
  explicit WeightCheck(const Export& reference) : reference_(reference) {}
  // Same FQNs, same metadata, sizes that match the blobs; queues the bytes.
  Status add(const CudaDelegate& reference_delegate, const Export& candidate, const CudaDelegate& candidate_delegate);
  // Proves every queued blob equal to the reference's.
  Status run(unsigned threads, CompareStats& stats) const;
  uint64_t weight_count() const { return queued_.size(); }
  uint64_t weight_bytes() const;

 private:
  struct Candidate {
    const Export* source = nullptr;
    std::string key;
    Blob blob;
  };
  struct Queued {
    std::string identity;  // delegate, for messages
    std::string fqn;
    std::string key;  // in the reference
    Blob reference;
    std::vector<Candidate> candidates;
  };
  Status queue(const CudaDelegate& reference_delegate, const CudaWeight& reference_weight, const Export& candidate,
               const CudaDelegate& candidate_delegate, const CudaWeight& candidate_weight);

  const Export& reference_;
  std::vector<Queued> queued_;
  std::map<std::string, size_t> by_key_;  // reference storage key -> queued_ index
};

// ---- Variants -----------------------------------------------------------------

// A library to place in the output, with where it comes from.
struct LibrarySource {
  std::string key;
  Blob blob;
  const Export* source = nullptr;
};

struct DelegateVariants {
  std::vector<CudaVariant> variants;
  std::vector<VariantOrigin> origins;
  std::vector<LibrarySource> libraries;
};

// The GPU code found in one shared library.
struct LibraryKernels {
  std::vector<uint32_t> cubin_sms;  // 80 for an sm_80 cubin
  std::vector<uint32_t> ptx_sms;    // 75 for compute_75 PTX
};

// scan_kernels once per library key (keys are content hashes).
class LibraryScanCache {
 public:
  explicit LibraryScanCache(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  // `name` identifies the library in errors ("a.pte(): named data '<key>'").
  // With `program`, the library's kernel files there (kernel_files.h) are
  // scanned with it.
  Result<const LibraryKernels*> get(const std::string& key, Bytes library, const std::string& name,
                                    const PteFile* program = nullptr);

 private:
  bool enabled_;
  std::map<std::string, LibraryKernels> cache_;
};

// The variant set of delegate `delegate_position` (an index into each
// export's `cuda`), queuing weight checks of every input against the first.
Result<DelegateVariants> select_variants(const std::vector<Export>& regular, const Export* fallback,
                                         size_t delegate_position, WeightCheck& weights,
                                         LibraryScanCache& scans);

// merge_programs in two steps, for callers that opened the inputs already:
// the request's own checks, then the merge of the loaded inputs (`regular`
// in the order of request.inputs, `fallback` for request.fallback), with
// libraries scanned through `scans` (enabled as request.check_kernels says).
Status check_merge_request(const MergeRequest& request);
Result<MergeResult> merge_exports(const MergeRequest& request, std::vector<Export> regular,
                                  std::unique_ptr<Export> fallback, LibraryScanCache& scans);

// ---- Output -------------------------------------------------------------------

struct MergedDelegate {
  size_t plan = 0;
  size_t index = 0;
  std::vector<uint8_t> payload;
};

// Writes the merged .pte and the copy of the weights into temporary files on
// a thread of its own, so that the copy (and the disk's writeback of it) runs
// while the weights are still being compared; nothing reaches the final
// paths before commit(), and a job destroyed uncommitted leaves nothing.
class OutputJob {
 public:
  OutputJob(const Export& reference, std::vector<MergedDelegate> delegates, std::vector<LibrarySource> libraries,
            std::string output_pte, std::string output_ptd);
  ~OutputJob();
  OutputJob(const OutputJob&) = delete;
  OutputJob& operator=(const OutputJob&) = delete;

  void start();
  // Stops the copy at its next slice (a check failed); wait() still joins.
  void cancel() { cancelled_.store(true); }
  Status wait();
  // The data file first: a program that lands without its weights is worse
  // than weights without their program.
  Status commit();

 private:
  Status write();
  Status copy_weights(AtomicOutput& out);

  const Export& reference_;
  std::vector<MergedDelegate> delegates_;
  std::vector<LibrarySource> libraries_;
  std::string output_pte_;
  std::string output_ptd_;
  std::thread thread_;
  std::atomic<bool> cancelled_{false};
  Status status_;
  std::optional<AtomicOutput> pte_out_;
  std::optional<AtomicOutput> ptd_out_;
};

// "a.pte() and b.pte()": the pair every refusal starts with.
inline std::string pair_name(const Export& a, const Export& b) { return a.name() + " and " + b.name(); }

}  // namespace ptb::detail
