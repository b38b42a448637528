// Every variant must run on the same weights: the same FQNs with the same
// metadata, storage sizes that match the blobs, and equal bytes. Metadata is
// checked as inputs are met; the bytes are queued and compared in one pass at
// the end (merge_compare.cc), each reference blob read once for all inputs.
#include <sys/stat.h>

#include <map>

#include "merge/merge_internal.h"

namespace ptb::detail {
namespace {

std::string show_dims(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

// The first metadata field where two entries of one FQN differ, if any.
std::optional<std::string> metadata_difference(const CudaWeight& a, const CudaWeight& b) {
  auto show = [](const char* field, const std::string& x, const std::string& y) {
    return std::string(field) + " " + x + " vs " + y;
  };
  if (a.storage_nbytes != b.storage_nbytes) return show("storage size", std::to_string(a.storage_nbytes), std::to_string(b.storage_nbytes));
  if (a.dtype != b.dtype) return show("dtype", std::to_string(a.dtype), std::to_string(b.dtype));
  if (a.device_type != b.device_type) return show("device", std::to_string(a.device_type), std::to_string(b.device_type));
  if (a.storage_offset != b.storage_offset)
    return show("storage offset", std::to_string(a.storage_offset), std::to_string(b.storage_offset));
  if (a.sizes != b.sizes) return show("sizes", show_dims(a.sizes), show_dims(b.sizes));
  if (a.strides != b.strides) return show("strides", show_dims(a.strides), show_dims(b.strides));
  return std::nullopt;
}

Result<std::map<std::string, const CudaWeight*>> by_fqn(const Export& e, const CudaDelegate& delegate) {
  std::map<std::string, const CudaWeight*> out;
  for (const CudaWeight& weight : delegate.payload->weights) {
    if (!out.emplace(weight.fqn, &weight).second) {
      return invalid(e.name() + ": " + delegate.identity() + ": weight FQN '" + weight.fqn +
                     "' appears twice; expected each FQN once");
    }
  }
  return out;
}

// Whether two blobs are the very same bytes of the same file (one input given
// twice, or two inputs sharing a data file): nothing to compare then.
bool same_storage(const Blob& a, const Blob& b) {
  if (a.bytes.data() == b.bytes.data()) return true;
  struct stat sa {}, sb {};
  if (::fstat(a.file->fd(), &sa) != 0 || ::fstat(b.file->fd(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && a.offset() == b.offset();
}

Result<Blob> sized_blob(const Export& e, const CudaDelegate& delegate, const CudaWeight& weight) {
  auto blob = e.find_blob(weight.storage_key);
  std::string where = e.name() + ": " + delegate.identity() + ": weight '" + weight.fqn + "'";
  if (!blob) {
    return invalid(where + " is stored under key '" + weight.storage_key + "', which neither " + e.name() +
                   (e.ptd() ? " nor " + e.ptd()->path() : std::string(" (given without a data file)")) + " holds");
  }
  if (blob->bytes.size() != weight.storage_nbytes) {
    return invalid(where + ": the blob '" + weight.storage_key + "' in " + e.blob_file(weight.storage_key) + " holds " +
                   std::to_string(blob->bytes.size()) + " bytes; expected " + std::to_string(weight.storage_nbytes) +
                   " (the storage size in the CUDA payload)");
  }
  return *blob;
}

}  // namespace

Status WeightCheck::add(const CudaDelegate& reference_delegate, const Export& candidate,
                        const CudaDelegate& candidate_delegate) {
  PTB_TRY(auto reference_weights, by_fqn(reference_, reference_delegate));
  PTB_TRY(auto candidate_weights, by_fqn(candidate, candidate_delegate));
  std::string pair = pair_name(reference_, candidate);
  std::string identity = reference_delegate.identity();
  for (const auto& [fqn, weight] : reference_weights) {
    if (!candidate_weights.count(fqn)) {
      return invalid(pair + " have different weights: " + identity + ": FQN '" + fqn + "' only in " +
                     reference_.name() + "; expected the same FQNs");
    }
  }
  for (const auto& [fqn, weight] : candidate_weights) {
    if (!reference_weights.count(fqn)) {
      return invalid(pair + " have different weights: " + identity + ": FQN '" + fqn + "' only in " + candidate.name() +
                     "; expected the same FQNs");
    }
  }
  // In payload order, so the first difference reported is the first FQN.
  for (const CudaWeight& weight : reference_delegate.payload->weights) {
    const CudaWeight& other = *candidate_weights.at(weight.fqn);
    if (auto found = metadata_difference(weight, other)) {
      return invalid(pair + " have different weights: " + identity + ": FQN '" + weight.fqn + "': " + *found +
                     "; expected the same metadata");
    }
    PTB_CHECK(queue(reference_delegate, weight, candidate, candidate_delegate, other));
  }
  return {};
}

Status WeightCheck::queue(const CudaDelegate& reference_delegate, const CudaWeight& reference_weight,
                          const Export& candidate, const CudaDelegate& candidate_delegate,
                          const CudaWeight& candidate_weight) {
  auto [slot, inserted] = by_key_.emplace(reference_weight.storage_key, queued_.size());
  if (inserted) {
    auto reference_blob = sized_blob(reference_, reference_delegate, reference_weight);
    if (!reference_blob.ok()) {
      by_key_.erase(slot);
      return reference_blob.take_error();
    }
    queued_.push_back({reference_delegate.identity(), reference_weight.fqn, reference_weight.storage_key,
                       *reference_blob, {}});
  }
  Queued& queued = queued_[slot->second];
  PTB_TRY(Blob blob, sized_blob(candidate, candidate_delegate, candidate_weight));
  if (same_storage(queued.reference, blob)) return {};
  for (const Candidate& known : queued.candidates) {
    if (known.source == &candidate && known.key == candidate_weight.storage_key) return {};
  }
  queued.candidates.push_back({&candidate, candidate_weight.storage_key, blob});
  return {};
}

Status WeightCheck::run(unsigned threads, CompareStats& stats) const {
  std::vector<CompareGroup> groups;
  for (const Queued& queued : queued_) {
    CompareGroup group{queued.reference, {}};
    for (const Candidate& candidate : queued.candidates) group.candidates.push_back(candidate.blob);
    groups.push_back(std::move(group));
  }
  auto mismatch = compare_groups(groups, threads, stats);
  if (!mismatch) return {};
  const Queued& queued = queued_[mismatch->group];
  const Candidate& candidate = queued.candidates[mismatch->candidate];
  return invalid(pair_name(reference_, *candidate.source) + " have different weights: " + queued.identity + ": FQN '" +
                 queued.fqn + "': byte " + std::to_string(mismatch->offset) + " of " + std::to_string(queued.reference.bytes.size()) +
                 " differs (key '" + queued.key + "' in " + reference_.blob_file(queued.key) + " and '" + candidate.key +
                 "' in " + candidate.source->blob_file(candidate.key) + "); expected identical weights in every variant");
}

uint64_t WeightCheck::weight_bytes() const {
  uint64_t total = 0;
  for (const Queued& queued : queued_) total += queued.reference.bytes.size();
  return total;
}

}  // namespace ptb::detail
