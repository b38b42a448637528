// Proving that inputs hold the same bytes. Both sides are mapped local files,
// so comparing them directly runs at memory speed, several times faster than
// hashing each (SHA-256 manages about 1.5 GB/s per core), and a reference
// slice is compared with every candidate while it is still in cache, so the
// reference is read once however many inputs there are.
//
// Touching a mapped page counts it in this process's memory, so each slice's
// pages are handed back (MADV_DONTNEED: they stay in the page cache, only the
// mapping forgets them) once compared; a 2 GiB comparison then costs a few
// MiB of resident memory instead of 2 GiB.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "merge/merge_internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels answer EINVAL and pages fault in as usual
#endif

namespace ptb::detail {
namespace {

// Big enough that page-table work is amortized, small enough that every
// thread's slices of all inputs fit in a few MiB.
constexpr uint64_t kSlice = 2ull << 20;
// Below this, starting threads costs more than it saves.
constexpr uint64_t kParallelThreshold = 16ull << 20;

struct Unit {
  size_t group;
  uint64_t offset;
  uint64_t size;
};

uintptr_t page_size() {
  static const uintptr_t size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// The kernel maps pages around a faulting one too ("fault-around", 64 KiB by
// default), so populating a slice also maps a little of its neighbours; the
// release reaches that far on both sides so that nothing accumulates.
constexpr uintptr_t kFaultAround = 64u << 10;

// Whole pages covering `range`, widened by `margin` within the file's mapping
// (a mapping is page-granular, so they all belong to it).
void advise(const MappedFile* file, Bytes range, int advice, uintptr_t margin = 0) {
  if (!file || range.empty()) return;
  auto begin = reinterpret_cast<uintptr_t>(range.data());
  auto end = begin + range.size();
  auto file_begin = reinterpret_cast<uintptr_t>(file->bytes().data());
  auto file_end = file_begin + file->size();
  if (begin < file_begin || end > file_end) return;
  begin = begin - file_begin > margin ? begin - margin : file_begin;
  end = file_end - end > margin ? end + margin : file_end;
  uintptr_t page = page_size();
  begin &= ~(page - 1);
  end = (end + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

bool before(const Mismatch& a, const Mismatch& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.offset != b.offset) return a.offset < b.offset;
  return a.candidate < b.candidate;
}

class Comparer {
 public:
  Comparer(const std::vector<CompareGroup>& groups, ProgressCounter& progress) : groups_(groups), progress_(progress) {
    for (size_t g = 0; g < groups.size(); ++g) {
      uint64_t size = groups[g].reference.bytes.size();
      for (uint64_t offset = 0; offset < size; offset += kSlice) {
        units_.push_back({g, offset, std::min(kSlice, size - offset)});
      }
    }
  }

  void work() {
    for (;;) {
      if (stop_.load(std::memory_order_relaxed)) return;
      size_t index = next_.fetch_add(1);
      if (index >= units_.size()) return;
      compare(units_[index]);
    }
  }

  std::optional<Mismatch> result() const { return found_; }
  uint64_t bytes_read() const { return bytes_read_.load(); }

 private:
  void compare(const Unit& unit) {
    const CompareGroup& group = groups_[unit.group];
    Bytes reference = group.reference.bytes.subspan(unit.offset, unit.size);
    advise(group.reference.file, reference, MADV_POPULATE_READ);
    uint64_t read = reference.size();
    for (size_t c = 0; c < group.candidates.size(); ++c) {
      const Blob& blob = group.candidates[c];
      Bytes candidate = blob.bytes.subspan(unit.offset, unit.size);
      advise(blob.file, candidate, MADV_POPULATE_READ);
      read += candidate.size();
      if (std::memcmp(reference.data(), candidate.data(), reference.size()) != 0) {
        uint64_t at = unit.offset + first_difference(reference, candidate).value_or(0);
        record({unit.group, c, at});
      }
      advise(blob.file, candidate, MADV_DONTNEED, kFaultAround);
    }
    advise(group.reference.file, reference, MADV_DONTNEED, kFaultAround);
    bytes_read_.fetch_add(read);
    progress_.add(read);
  }

  // Units are taken in order, so once a mismatch is known every earlier unit
  // has been taken; letting those finish and taking no more keeps the
  // reported mismatch the first one whatever the thread timing.
  void record(const Mismatch& mismatch) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!found_ || before(mismatch, *found_)) found_ = mismatch;
    stop_.store(true);
  }

  const std::vector<CompareGroup>& groups_;
  ProgressCounter& progress_;
  std::vector<Unit> units_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_read_{0};
  std::mutex mutex_;
  std::optional<Mismatch> found_;
};

}  // namespace

unsigned comparison_threads(unsigned requested) {
  if (requested > 0) return std::min(requested, 64u);
  unsigned cores = std::thread::hardware_concurrency();
  return std::clamp(cores, 1u, 4u);
}

std::optional<uint64_t> first_difference(Bytes a, Bytes b) {
  size_t size = std::min(a.size(), b.size());
  // Narrow down by blocks first: memcmp is much faster than a byte loop.
  constexpr size_t kBlock = 4096;
  size_t at = 0;
  while (at < size) {
    size_t block = std::min(kBlock, size - at);
    if (std::memcmp(a.data() + at, b.data() + at, block) != 0) {
      for (size_t i = at; i < at + block; ++i) {
        if (a[i] != b[i]) return i;
      }
    }
    at += block;
  }
  if (a.size() != b.size()) return size;
  return std::nullopt;
}

std::optional<Mismatch> compare_groups(const std::vector<CompareGroup>& groups, unsigned threads,
                                       CompareStats& stats) {
  uint64_t total = 0;
  for (const CompareGroup& group : groups) total += group.reference.bytes.size() * (1 + group.candidates.size());
  ProgressCounter progress(stats.progress, total, "comparing weights");
  Comparer comparer(groups, progress);
  unsigned count = total < kParallelThreshold ? 1 : comparison_threads(threads);
  std::vector<std::thread> helpers;
  for (unsigned i = 1; i < count; ++i) helpers.emplace_back([&comparer] { comparer.work(); });
  comparer.work();
  for (std::thread& helper : helpers) helper.join();
  stats.bytes_read += comparer.bytes_read();
  return comparer.result();
}

}  // namespace ptb::detail
