// Hashing files without making them resident. The bytes are read with pread
// into one small buffer rather than through the mapping: faulting a mapping
// in page by page (and dropping the pages again) costs more than the copy,
// on cached and on sparse files alike (bench_inspect compares them).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "ptbundle/base/sha256.h"

namespace ptb {
namespace {

Result<std::string> hash_fd_range(int fd, uint64_t offset, uint64_t size, const std::string& name,
                                  ProgressCounter* progress) {
  constexpr uint64_t kSlice = 1 << 20;
  std::vector<uint8_t> buffer(static_cast<size_t>(std::max<uint64_t>(1, std::min(kSlice, size))));
  Sha256 hasher;
  uint64_t done = 0;
  while (done < size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - done));
    ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return io_error(name + ": read failed at offset " + std::to_string(offset + done) + ": " + std::strerror(errno));
    if (got == 0)
      return io_error(name + ": the file ended at offset " + std::to_string(offset + done) +
                      " while it was hashed (cut short while read?); expected " + std::to_string(offset + size) + " bytes");
    hasher.update(Bytes(buffer.data(), static_cast<size_t>(got)));
    done += static_cast<uint64_t>(got);
    if (progress) progress->add(static_cast<uint64_t>(got));
  }
  return to_hex(hasher.finish());
}

}  // namespace

Result<std::string> sha256_file_range(const MappedFile& file, uint64_t offset, uint64_t size,
                                      ProgressCounter* progress) {
  if (!range_fits(offset, size, file.size()))
    return invalid(file.path() + ": bytes [" + std::to_string(offset) + ", +" + std::to_string(size) +
                   ") to hash lie past the end of the file (" + std::to_string(file.size()) + " bytes)");
  return hash_fd_range(file.fd(), offset, size, file.path(), progress);
}

Result<std::string> sha256_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  Result<std::string> digest = std::string();
  if (::fstat(fd, &info) != 0) {
    digest = io_error(path + ": cannot read its size: " + std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    digest = io_error(path + ": is " + file_type_text(info.st_mode) + "; expected a regular file");
  } else {
    digest = hash_fd_range(fd, 0, static_cast<uint64_t>(info.st_size), path, nullptr);
  }
  ::close(fd);
  return digest;
}

}  // namespace ptb
