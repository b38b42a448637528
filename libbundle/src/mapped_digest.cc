// Hashing a range of a mapped file without keeping it resident: the pages of
// each slice are released (MADV_DONTNEED; the mapping is read-only, so they
// are simply re-read from the file if touched again) once hashed.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "ptbundle/inspect.h"
#include "ptbundle/sha256.h"

namespace ptb {
namespace {

constexpr uint64_t kSlice = 8 << 20;

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

// Releases the whole pages inside [begin, end) of the mapping at `base`.
void release_pages(const uint8_t* base, uint64_t begin, uint64_t end) {
  uint64_t page = page_size();
  uint64_t first = (begin + page - 1) / page * page;
  uint64_t last = end / page * page;
  if (last > first) {
    ::madvise(const_cast<uint8_t*>(base) + first, static_cast<size_t>(last - first), MADV_DONTNEED);
  }
}

}  // namespace

std::string sha256_mapped_range(const MappedFile& file, uint64_t offset, uint64_t size) {
  Bytes all = file.bytes();
  Sha256 hasher;
  if (size >= kSlice) {
    uint64_t page = page_size();
    uint64_t first = offset / page * page;
    ::madvise(const_cast<uint8_t*>(all.data()) + first, static_cast<size_t>(offset + size - first), MADV_SEQUENTIAL);
  }
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min(kSlice, size - done);
    hasher.update(all.subspan(static_cast<size_t>(offset + done), static_cast<size_t>(n)));
    // Small blobs are not worth a system call, and their pages may be shared
    // with the flatbuffer the caller is still reading.
    if (size >= kSlice) release_pages(all.data(), offset + done, offset + done + n);
    done += n;
  }
  return to_hex(hasher.finish());
}

uint64_t offset_alignment(uint64_t file_offset) {
  constexpr uint64_t kCap = 4096;
  if (file_offset == 0) return kCap;
  return std::min(kCap, file_offset & (~file_offset + 1));
}

}  // namespace ptb
