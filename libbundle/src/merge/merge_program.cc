// Are two exports the same program? ExecuTorch's merge compares the whole
// deserialized program after replacing each CUDA payload by a placeholder and
// dropping `cuda_include_ptx`; it then compares mutable data, the named data
// that is not CUDA's, and the external data that is not CUDA's. This does the
// same, dropping `data_name` as well (the name of the data file says nothing
// about what the program computes), and reports the first difference.
#include <algorithm>

#include "merge/merge_internal.h"

namespace ptb::detail {
namespace {

Error differ(const Export& a, const Export& b, const std::string& what) {
  return invalid(pair_name(a, b) + " are different programs: " + what +
                 "; expected the same program exported for different GPUs");
}

// Constant or mutable tensors as ExecuTorch restores them: the pieces of a
// segment between consecutive offsets, the last running to the segment's end.
std::vector<Blob> subsegment_pieces(const PteFile& pte, const fb::SubsegmentOffsets* subsegments) {
  std::vector<Blob> pieces;
  if (!subsegments || !subsegments->offsets() || subsegments->offsets()->size() == 0) return pieces;
  if (subsegments->segment_index() >= pte.segments().size()) return pieces;
  Bytes segment = pte.segment_bytes(subsegments->segment_index());
  const auto* offsets = subsegments->offsets();
  for (flatbuffers::uoffset_t i = 0; i < offsets->size(); ++i) {
    uint64_t begin = std::min<uint64_t>(offsets->Get(i), segment.size());
    uint64_t end = i + 1 < offsets->size() ? std::min<uint64_t>(offsets->Get(i + 1), segment.size()) : segment.size();
    pieces.push_back({segment.subspan(begin, end > begin ? end - begin : 0), &pte.file()});
  }
  return pieces;
}

std::vector<Blob> constant_pieces(const PteFile& pte) {
  const fb::Program& program = pte.program();
  std::vector<Blob> pieces = subsegment_pieces(pte, program.constant_segment());
  if (!pieces.empty() || !program.constant_buffer()) return pieces;
  for (const auto* buffer : *program.constant_buffer()) {
    const auto* storage = buffer->storage();
    pieces.push_back({storage ? Bytes(storage->data(), storage->size()) : Bytes(), &pte.file()});
  }
  return pieces;
}

// Compares lists of blobs piece by piece; `label(i)` names piece i.
template <class Label>
Status compare_lists(const Export& a, const Export& b, const std::vector<Blob>& pieces_a,
                     const std::vector<Blob>& pieces_b, const std::string& what, Label label, unsigned threads,
                     CompareStats& stats) {
  if (pieces_a.size() != pieces_b.size()) {
    return differ(a, b, what + ": " + std::to_string(pieces_a.size()) + " vs " + std::to_string(pieces_b.size()));
  }
  std::vector<CompareGroup> groups;
  std::vector<size_t> group_piece;
  for (size_t i = 0; i < pieces_a.size(); ++i) {
    if (pieces_a[i].bytes.size() != pieces_b[i].bytes.size()) {
      return differ(a, b, label(i) + ": " + std::to_string(pieces_a[i].bytes.size()) + " bytes vs " + std::to_string(pieces_b[i].bytes.size()));
    }
    if (pieces_a[i].bytes.data() == pieces_b[i].bytes.data()) continue;
    groups.push_back({pieces_a[i], {pieces_b[i]}});
    group_piece.push_back(i);
  }
  if (auto mismatch = compare_groups(groups, threads, stats)) {
    return differ(a, b, label(group_piece[mismatch->group]) + ": differs at byte " + std::to_string(mismatch->offset));
  }
  return {};
}

Status check_plans(const Export& a, const Export& b) {
  const fb::Program& program_a = a.pte().program();
  const fb::Program& program_b = b.pte().program();
  if (program_a.version() != program_b.version()) {
    return differ(a, b, "program version " + std::to_string(program_a.version()) + " vs " + std::to_string(program_b.version()));
  }
  const auto* plans_a = program_a.execution_plan();
  const auto* plans_b = program_b.execution_plan();
  size_t count_a = plans_a ? plans_a->size() : 0;
  size_t count_b = plans_b ? plans_b->size() : 0;
  if (count_a != count_b) return differ(a, b, std::to_string(count_a) + " methods vs " + std::to_string(count_b));
  for (flatbuffers::uoffset_t i = 0; i < count_a; ++i) {
    const fb::ExecutionPlan& plan_a = *plans_a->Get(i);
    const fb::ExecutionPlan& plan_b = *plans_b->Get(i);
    std::string name_a = plan_a.name() ? plan_a.name()->str() : "";
    std::string name_b = plan_b.name() ? plan_b.name()->str() : "";
    if (name_a != name_b) return differ(a, b, "method " + std::to_string(i) + " is '" + name_a + "' vs '" + name_b + "'");
    if (auto found = plan_difference(plan_a, plan_b)) return differ(a, b, "method '" + name_a + "', " + *found);
  }
  return {};
}

// Processed data of the delegates that are not CUDA's, in delegate order.
std::vector<Blob> foreign_payloads(const Export& e, std::vector<std::string>& labels) {
  std::vector<Blob> payloads;
  const auto* plans = e.pte().program().execution_plan();
  for (flatbuffers::uoffset_t p = 0; plans && p < plans->size(); ++p) {
    const auto* delegates = plans->Get(p)->delegates();
    for (flatbuffers::uoffset_t d = 0; delegates && d < delegates->size(); ++d) {
      const auto* id = delegates->Get(d)->id();
      if (id && id->string_view() == kCudaBackendId) continue;
      payloads.push_back({e.pte().delegate_payload(p, d), &e.pte().file()});
      std::string method = plans->Get(p)->name() ? plans->Get(p)->name()->str() : "";
      labels.push_back("method '" + method + "' delegate " + std::to_string(d) + " (" + (id ? id->str() : "") + ") processed data");
    }
  }
  return payloads;
}

// Keys and blobs of a store, minus CUDA's own keys, sorted by key.
struct KeyedBlobs {
  std::vector<std::string> keys;
  std::vector<Blob> blobs;
};

// A library's kernel files ("<library key>/<file name>", kernel_files.h)
// are CUDA's: built for one GPU like the library, they differ between
// exports as it does.
bool is_kernel_file_of_library(const Export& e, const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash != std::string::npos && e.library_keys.count(key.substr(0, slash)) > 0;
}

KeyedBlobs program_named_data(const Export& e) {
  std::map<std::string, Blob> sorted;
  for (const PteNamedData& entry : e.pte().named_data()) {
    if (e.library_keys.count(entry.key) || e.weight_keys.count(entry.key) || is_kernel_file_of_library(e, entry.key))
      continue;
    sorted.emplace(entry.key, Blob{e.pte().named_data_bytes(entry), &e.pte().file()});
  }
  KeyedBlobs out;
  for (auto& [key, blob] : sorted) {
    out.keys.push_back(key);
    out.blobs.push_back(blob);
  }
  return out;
}

KeyedBlobs external_data(const Export& e) {
  std::map<std::string, Blob> sorted;
  if (e.ptd()) {
    for (const PtdEntry& entry : e.ptd()->entries()) {
      if (e.weight_keys.count(entry.key)) continue;
      sorted.emplace(entry.key, Blob{e.ptd()->bytes(entry), &e.ptd()->file()});
    }
  }
  KeyedBlobs out;
  for (auto& [key, blob] : sorted) {
    out.keys.push_back(key);
    out.blobs.push_back(blob);
  }
  return out;
}

Status compare_keyed(const Export& a, const Export& b, const KeyedBlobs& blobs_a, const KeyedBlobs& blobs_b,
                     const std::string& what, unsigned threads, CompareStats& stats) {
  if (blobs_a.keys != blobs_b.keys) {
    auto mismatch = std::mismatch(blobs_a.keys.begin(), blobs_a.keys.end(), blobs_b.keys.begin(), blobs_b.keys.end());
    std::string only = mismatch.first != blobs_a.keys.end() &&
                               (mismatch.second == blobs_b.keys.end() || *mismatch.first < *mismatch.second)
                           ? "'" + *mismatch.first + "' only in " + a.name()
                           : "'" + *mismatch.second + "' only in " + b.name();
    return differ(a, b, what + " keys differ: " + only);
  }
  return compare_lists(a, b, blobs_a.blobs, blobs_b.blobs, what,
                       [&](size_t i) { return what + " '" + blobs_a.keys[i] + "'"; }, threads, stats);
}

Status check_cuda_layout(const Export& a, const Export& b) {
  for (size_t i = 0; i < std::max(a.cuda.size(), b.cuda.size()); ++i) {
    if (i >= a.cuda.size() || i >= b.cuda.size() || a.cuda[i].plan != b.cuda[i].plan ||
        a.cuda[i].index != b.cuda[i].index) {
      std::string at_a = i < a.cuda.size() ? a.cuda[i].identity() : "none";
      std::string at_b = i < b.cuda.size() ? b.cuda[i].identity() : "none";
      return differ(a, b, "CUDA delegate " + std::to_string(i) + " is " + at_a + " vs " + at_b);
    }
  }
  return {};
}

}  // namespace

Status check_same_program(const Export& a, const Export& b, unsigned threads, CompareStats& stats) {
  PTB_CHECK(check_plans(a, b));

  std::vector<std::string> labels_a, labels_b;
  std::vector<Blob> payloads_a = foreign_payloads(a, labels_a);
  std::vector<Blob> payloads_b = foreign_payloads(b, labels_b);
  PTB_CHECK(compare_lists(a, b, payloads_a, payloads_b, "delegates that are not CUDA's",
                          [&](size_t i) { return labels_a[i]; }, threads, stats));

  PTB_CHECK(compare_lists(a, b, constant_pieces(a.pte()), constant_pieces(b.pte()), "constant tensors",
                          [](size_t i) { return "constant tensor " + std::to_string(i); }, threads, stats));

  const auto* mutable_a = a.pte().program().mutable_data_segments();
  const auto* mutable_b = b.pte().program().mutable_data_segments();
  size_t mutable_count_a = mutable_a ? mutable_a->size() : 0;
  size_t mutable_count_b = mutable_b ? mutable_b->size() : 0;
  if (mutable_count_a != mutable_count_b) {
    return differ(a, b, "mutable data segments: " + std::to_string(mutable_count_a) + " vs " + std::to_string(mutable_count_b));
  }
  for (flatbuffers::uoffset_t i = 0; i < mutable_count_a; ++i) {
    PTB_CHECK(compare_lists(a, b, subsegment_pieces(a.pte(), mutable_a->Get(i)), subsegment_pieces(b.pte(), mutable_b->Get(i)),
                            "mutable tensors", [i](size_t t) { return "mutable data " + std::to_string(i) + " tensor " + std::to_string(t); },
                            threads, stats));
  }

  PTB_CHECK(compare_keyed(a, b, program_named_data(a), program_named_data(b), "named data (not CUDA's)", threads, stats));
  PTB_CHECK(compare_keyed(a, b, external_data(a), external_data(b), "external data (not CUDA's)", threads, stats));
  return check_cuda_layout(a, b);
}

}  // namespace ptb::detail
