// Files in and out. Inputs are memory-mapped read-only so that a 4 GiB data
// file costs no memory until its bytes are touched; outputs go to a temporary
// file in the target folder and are renamed into place only when complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb {

using Bytes = std::span<const uint8_t>;

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  Bytes bytes() const { return {data_, static_cast<size_t>(size_)}; }
  int fd() const { return fd_; }

  // The bytes [offset, offset + size) or an error naming this file, `what`
  // and the range, if the range does not lie inside the file.
  Result<Bytes> slice(uint64_t offset, uint64_t size, const std::string& what) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
};

// [offset, offset + size) inside [0, limit), without overflow.
inline bool range_fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// A file written next to its final path and renamed over it by commit().
// Destroyed without commit(), it removes the temporary file: a failed command
// leaves nothing behind.
class AtomicOutput {
 public:
  static Result<AtomicOutput> create(const std::string& final_path);

  AtomicOutput() = default;
  AtomicOutput(AtomicOutput&& other) noexcept;
  AtomicOutput& operator=(AtomicOutput&& other) noexcept;
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  ~AtomicOutput();

  Status write(Bytes data);
  Status write_zeros(uint64_t count);
  // Appends `size` bytes of `source` from `offset` using the kernel
  // (copy_file_range, which reflinks where the file system can), never
  // through a user-space buffer unless the kernel refuses.
  Status copy_from(const MappedFile& source, uint64_t offset, uint64_t size);
  uint64_t position() const { return position_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }

  // fsyncs, renames over final_path and fsyncs the folder.
  Status commit();

 private:
  void discard();
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t position_ = 0;
};

// Writes a whole small file atomically.
Status write_file_atomically(const std::string& path, Bytes data);
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ptb
