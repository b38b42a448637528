// Writing the merged export: the first input's program with each CUDA
// delegate's payload replaced by the merged one (and `cuda_include_ptx`
// dropped: the merged delegate's PTX is its declared fallback), the first
// input's named data plus every chosen variant's library, and one copy of
// the validated weights. Every blob is copied by the kernel from the input
// that holds it; the segments are laid out as ExecuTorch's serializer does
// (constant, mutable, delegate payloads, named data).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "merge/merge_internal.h"
#include "merge/merge_pair.h"
#include "ptbundle/base/interrupt.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb::detail {
namespace {

class SegmentList {
 public:
  explicit SegmentList(const PteFile& reference) : reference_(reference) {}

  // The output index of the reference's segment `index`, added on first use.
  uint32_t keep(uint32_t index) {
    auto [slot, fresh] = kept_.emplace(index, 0);
    if (fresh) {
      Blob blob{reference_.segment_bytes(index), &reference_.file()};
      slot->second = add(SegmentSource::file_range(*blob.file, blob.offset(), blob.bytes.size()));
    }
    return slot->second;
  }

  uint32_t add(SegmentSource source) {
    sources_.push_back(source);
    return static_cast<uint32_t>(sources_.size() - 1);
  }

  const std::vector<SegmentSource>& sources() const { return sources_; }

 private:
  const PteFile& reference_;
  std::map<uint32_t, uint32_t> kept_;
  std::vector<SegmentSource> sources_;
};

const MergedDelegate* merged_at(const std::vector<MergedDelegate>& delegates, size_t plan, size_t index) {
  for (const MergedDelegate& merged : delegates) {
    if (merged.plan == plan && merged.index == index) return &merged;
  }
  return nullptr;
}

void drop_include_ptx(fb::BackendDelegateT& delegate) {
  auto& specs = delegate.compile_specs;
  specs.erase(std::remove_if(specs.begin(), specs.end(),
                             [](const auto& spec) { return spec && spec->key == "cuda_include_ptx"; }),
              specs.end());
}

// Rewrites `program`'s segment references for the output and lists the
// output's segments.
std::vector<SegmentSource> relayout(fb::ProgramT& program, const Export& reference,
                                    const std::vector<MergedDelegate>& delegates,
                                    const std::vector<LibrarySource>& libraries) {
  SegmentList segments(reference.pte());
  if (program.constant_segment && program.constant_segment->segment_index < reference.pte().segments().size()) {
    program.constant_segment->segment_index = segments.keep(program.constant_segment->segment_index);
  }
  for (auto& subsegments : program.mutable_data_segments) {
    if (subsegments) subsegments->segment_index = segments.keep(subsegments->segment_index);
  }

  std::vector<std::unique_ptr<fb::BackendDelegateInlineDataT>> inline_data;
  for (size_t p = 0; p < program.execution_plan.size(); ++p) {
    auto& plan = program.execution_plan[p];
    for (size_t d = 0; plan && d < plan->delegates.size(); ++d) {
      fb::BackendDelegateT& delegate = *plan->delegates[d];
      if (!delegate.processed) delegate.processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
      fb::BackendDelegateDataReferenceT& processed = *delegate.processed;
      if (const MergedDelegate* merged = merged_at(delegates, p, d)) {
        drop_include_ptx(delegate);
        processed.location = fb::DataLocation::SEGMENT;
        processed.index = segments.add(SegmentSource::memory(Bytes(merged->payload.data(), merged->payload.size())));
      } else if (processed.location == fb::DataLocation::SEGMENT) {
        processed.index = segments.keep(processed.index);
      } else {
        inline_data.push_back(std::move(program.backend_delegate_data[processed.index]));
        processed.index = static_cast<uint32_t>(inline_data.size() - 1);
      }
    }
  }
  program.backend_delegate_data = std::move(inline_data);

  for (auto& entry : program.named_data) {
    if (entry) entry->segment_index = segments.keep(entry->segment_index);
  }
  for (const LibrarySource& library : libraries) {
    bool present = std::any_of(program.named_data.begin(), program.named_data.end(),
                               [&](const auto& entry) { return entry && entry->key == library.key; });
    if (present) continue;
    auto entry = std::make_unique<fb::NamedDataT>();
    entry->key = library.key;
    entry->segment_index =
        segments.add(SegmentSource::file_range(*library.blob.file, library.blob.offset(), library.blob.bytes.size()));
    program.named_data.push_back(std::move(entry));
  }
  return segments.sources();
}

}  // namespace

OutputJob::OutputJob(const Export& reference, std::vector<MergedDelegate> delegates,
                     std::vector<LibrarySource> libraries, std::string output_pte, std::string output_ptd)
    : reference_(reference),
      delegates_(std::move(delegates)),
      libraries_(std::move(libraries)),
      output_pte_(std::move(output_pte)),
      output_ptd_(std::move(output_ptd)) {}

OutputJob::~OutputJob() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

void OutputJob::start() {
  thread_ = std::thread([this] { status_ = write(); });
}

Status OutputJob::wait() {
  if (thread_.joinable()) thread_.join();
  return status_;
}

Status OutputJob::write() {
  std::unique_ptr<fb::ProgramT> program(reference_.pte().program().UnPack());
  std::vector<SegmentSource> segments = relayout(*program, reference_, delegates_, libraries_);
  PTB_TRY(AtomicOutput pte_out, AtomicOutput::create(output_pte_));
  PTB_TRY(auto layout, write_pte(pte_out, *program, segments));
  (void)layout;
  pte_out_ = std::move(pte_out);
  if (!output_ptd_.empty() && reference_.ptd()) {
    PTB_TRY(AtomicOutput ptd_out, AtomicOutput::create(output_ptd_));
    PTB_CHECK(copy_weights(ptd_out));
    ptd_out_ = std::move(ptd_out);
  }
  return {};
}

// The whole data file of the first input, by the kernel, in slices so that a
// cancel stops it soon; after each slice the disk is asked to start writing
// it back, so that the fsync of commit() finds little left to do.
Status OutputJob::copy_weights(AtomicOutput& out) {
  constexpr uint64_t kSlice = 64ull << 20;
  const MappedFile& weights = reference_.ptd()->file();
  int writeback = ::open(out.temp_path().c_str(), O_WRONLY | O_CLOEXEC);
  for (uint64_t done = 0; done < weights.size();) {
    if (cancelled_.load()) break;
    uint64_t slice = std::min(kSlice, weights.size() - done);
    Status copied = out.copy_from(weights, done, slice);
    if (!copied.ok()) {
      if (writeback >= 0) ::close(writeback);
      return copied;
    }
    if (writeback >= 0) {
      ::sync_file_range(writeback, static_cast<off64_t>(done), static_cast<off64_t>(slice), SYNC_FILE_RANGE_WRITE);
    }
    done += slice;
  }
  if (writeback >= 0) ::close(writeback);
  return {};
}

// The .pte and .ptd are a pair: renamed one right after the other, with
// nothing slow between (both already on disk) and SIGINT, SIGTERM and SIGHUP
// held back until both are in place, so that an interruption never leaves a
// new program beside the old data file (or the reverse). Against SIGKILL or
// a power cut between the two renames, a journal (merge_pair.h) that the
// next merge finishes and verify names.
Status OutputJob::commit() {
  PTB_CHECK(wait());
  if (cancelled_.load()) return invalid(output_pte_ + ": the merge was cancelled; nothing was written");
  for (AtomicOutput* out : {ptd_out_ ? &*ptd_out_ : nullptr, &*pte_out_}) {
    if (!out) continue;
    int fd = ::open(out->temp_path().c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      Error error = io_error(out->final_path() + ": cannot write the temporary file to disk: " + std::strerror(errno));
      if (fd >= 0) ::close(fd);
      return error;
    }
    ::close(fd);
  }
  DeferInterrupts defer;
  if (!ptd_out_) return pte_out_->commit();
  PTB_CHECK(write_pair_journal(output_pte_, pte_out_->temp_path(), output_ptd_, ptd_out_->temp_path()));
  test_kill_point("merge-pair-journal");
  if (Status data = ptd_out_->commit(); !data.ok()) {
    remove_pair_journal(output_pte_);  // nothing renamed: the old pair stands
    return data;
  }
  test_kill_point("merge-pair");
  PTB_CHECK(pte_out_->commit());
  test_kill_point("merge-pair-done");
  remove_pair_journal(output_pte_);
  return {};
}

}  // namespace ptb::detail
