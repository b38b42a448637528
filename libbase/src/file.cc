#include "ptbundle/base/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ptb {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

Status fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error(dir + ": cannot open folder: " + errno_text());
  // Some file systems (tmpfs in containers) refuse fsync on folders; the
  // rename has happened either way, so only a failed open is an error.
  ::fsync(fd);
  ::close(fd);
  return {};
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto error = io_error(path + ": cannot stat: " + errno_text());
    ::close(fd);
    return error;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.fd_ = fd;
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ > 0) {
    void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) return io_error(path + ": cannot map: " + errno_text());
    file.data_ = static_cast<const uint8_t*>(data);
  }
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    // Not this->~MappedFile(): that would also end path_'s lifetime, and the
    // assignment below would then write into a destroyed string.
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
}

Result<Bytes> MappedFile::slice(uint64_t offset, uint64_t size, const std::string& what) const {
  if (!range_fits(offset, size, size_)) {
    return invalid(path_ + ": " + what + " at offset " + std::to_string(offset) + " with size " +
                   std::to_string(size) + " extends past the end of the file (" +
                   std::to_string(size_) + " bytes)");
  }
  return Bytes(data_ + offset, static_cast<size_t>(size));
}

Result<AtomicOutput> AtomicOutput::create(const std::string& final_path) {
  AtomicOutput out;
  out.final_path_ = final_path;
  auto name = std::filesystem::path(final_path).filename().string();
  std::string pattern = parent_dir(final_path) + "/." + name + ".XXXXXX.tmp";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  int fd = ::mkstemps(buffer.data(), 4);
  if (fd < 0) return io_error(final_path + ": cannot create a temporary file beside it: " + errno_text());
  ::fchmod(fd, 0644);
  out.fd_ = fd;
  out.temp_path_ = buffer.data();
  return out;
}

AtomicOutput::AtomicOutput(AtomicOutput&& other) noexcept { *this = std::move(other); }

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& other) noexcept {
  if (this != &other) {
    discard();
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
    position_ = std::exchange(other.position_, 0);
  }
  return *this;
}

AtomicOutput::~AtomicOutput() { discard(); }

void AtomicOutput::discard() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
    fd_ = -1;
  }
}

Status AtomicOutput::write(Bytes data) {
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(final_path_ + ": write failed: " + errno_text());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  position_ += data.size();
  return {};
}

Status AtomicOutput::write_zeros(uint64_t count) {
  static const uint8_t zeros[4096] = {};
  while (count > 0) {
    uint64_t n = count < sizeof zeros ? count : sizeof zeros;
    PTB_CHECK(write(Bytes(zeros, n)));
    count -= n;
  }
  return {};
}

Status AtomicOutput::copy_from(const MappedFile& source, uint64_t offset, uint64_t size) {
  if (!range_fits(offset, size, source.size()))
    return invalid(source.path() + ": copy range past the end of the file");
  loff_t in = static_cast<loff_t>(offset);
  uint64_t left = size;
  while (left > 0) {
    size_t chunk = left > (1u << 30) ? (1u << 30) : static_cast<size_t>(left);
    ssize_t n = ::copy_file_range(source.fd(), &in, fd_, nullptr, chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Across file systems, or a kernel without the call: plain write from
      // the mapping, which is still streamed (the page cache does the reading).
      uint64_t done = size - left;
      PTB_CHECK(write(source.bytes().subspan(offset + done, left)));
      return {};
    }
    left -= static_cast<uint64_t>(n);
    position_ += static_cast<uint64_t>(n);
  }
  return {};
}

Status AtomicOutput::commit() {
  if (fd_ < 0) return io_error(final_path_ + ": output already closed");
  if (::fsync(fd_) != 0) return io_error(final_path_ + ": fsync failed: " + errno_text());
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    return io_error(final_path_ + ": close failed: " + errno_text());
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    auto error = io_error(final_path_ + ": cannot rename the temporary file into place: " + errno_text());
    ::unlink(temp_path_.c_str());
    return error;
  }
  return fsync_dir(parent_dir(final_path_));
}

Status write_file_atomically(const std::string& path, Bytes data) {
  PTB_TRY(auto out, AtomicOutput::create(path));
  PTB_CHECK(out.write(data));
  return out.commit();
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  return write_file_atomically(path, Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace ptb
