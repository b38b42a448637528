#include "ptbundle/formats/segment_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <vector>

#include "ptbundle/base/sha256.h"

namespace ptb {
namespace {

// Large enough that the kernel copies efficiently, small enough that a
// progress line moves several times a second.
constexpr uint64_t kCopySlice = 256ull << 20;

}  // namespace

SegmentSource SegmentSource::memory(Bytes bytes, uint64_t alignment) {
  SegmentSource source;
  source.bytes = bytes;
  source.size = bytes.size();
  source.alignment = alignment == 0 ? 1 : alignment;
  return source;
}

SegmentSource SegmentSource::file_range(const MappedFile& file, uint64_t offset, uint64_t size,
                                        uint64_t alignment) {
  SegmentSource source;
  source.file = &file;
  source.offset = offset;
  source.size = size;
  source.alignment = alignment == 0 ? 1 : alignment;
  return source;
}

Status SegmentSource::write_to(AtomicOutput& out, const Progress& progress) const {
  if (!file) return out.write(bytes);
  if (!range_fits(offset, size, file->size())) {
    return invalid(file->path() + ": range at offset " + std::to_string(offset) + " with size " +
                   std::to_string(size) + " extends past the end of the file (" +
                   std::to_string(file->size()) + " bytes)");
  }
  // For copies of several slices, ask the kernel to start writing each
  // slice to disk as soon as it is copied, so that the fsync of commit()
  // waits for the last slice only instead of the whole file.
  int writeback_fd = size > kCopySlice ? ::open(out.temp_path().c_str(), O_RDONLY | O_CLOEXEC) : -1;
  const std::string what = progress ? "writing " + out.final_path() : std::string();
  uint64_t done = 0;
  Status status;
  while (done < size) {
    uint64_t slice = std::min(kCopySlice, size - done);
    uint64_t start = out.position();
    status = out.copy_from(*file, offset + done, slice);
    if (!status.ok()) break;
    if (writeback_fd >= 0)
      ::sync_file_range(writeback_fd, static_cast<off_t>(start), static_cast<off_t>(slice), SYNC_FILE_RANGE_WRITE);
    done += slice;
    if (progress) progress(done, size, what);
  }
  if (writeback_fd >= 0) ::close(writeback_fd);
  return status;
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  if (alignment <= 1) return value;
  uint64_t rest = value % alignment;
  return rest == 0 ? value : value + (alignment - rest);
}

uint64_t lcm_alignment(uint64_t a, uint64_t b) { return std::lcm(a == 0 ? 1 : a, b == 0 ? 1 : b); }

Status pad_to(AtomicOutput& out, uint64_t target) {
  if (out.position() > target) {
    return invalid(out.final_path() + ": layout error: at offset " + std::to_string(out.position()) +
                   ", past the planned offset " + std::to_string(target));
  }
  return out.write_zeros(target - out.position());
}

}  // namespace ptb
