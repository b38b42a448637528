// Files in and out. Inputs are memory-mapped read-only so that a 4 GiB data
// file costs no memory until its bytes are touched; outputs go to a temporary
// file in the target folder and are renamed into place only when complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb {

using Bytes = std::span<const uint8_t>;

class BundleDir;

// "a FIFO (named pipe)", "a character device", ...: what a non-regular file is.
std::string file_type_text(unsigned mode);

// Opens a file given on the command line for reading: symlinks are followed
// (the user named it), but only a regular file is accepted. O_NONBLOCK keeps
// the open of a FIFO from waiting for a writer; the type is checked with
// fstat before any read. Returns the descriptor (the caller closes it).
Result<int> open_regular_input(const std::string& path);

class MappedFile {
 public:
  // A top-level input (open_regular_input).
  static Result<MappedFile> open(const std::string& path);
  // A file inside a bundle folder: no symlink followed (BundleDir::open_fd).
  static Result<MappedFile> open_in(const BundleDir& dir, const std::string& relative);
  // Maps an open regular file; takes ownership of fd.
  static Result<MappedFile> from_fd(int fd, const std::string& path);

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

// A file this process wrote (AtomicOutput::guard_writes, then finish) and
// holds since: no other open of it happened while it was written (a write
// lease, which any other open breaks), and none for writing can happen while
// this is alive (a read lease: such an open waits, up to the kernel's
// lease-break-time, and breaks it). So while unchanged() holds, the file's
// bytes are the bytes written through the AtomicOutput, wherever a rename has
// put it: a digest of those bytes, computed as they were written, is the
// file's digest.
class HeldFile {
 public:
  HeldFile(int fd, uint64_t device, uint64_t inode, uint64_t size) : fd_(fd), device_(device), inode_(inode), size_(size) {}
  HeldFile(const HeldFile&) = delete;
  HeldFile& operator=(const HeldFile&) = delete;
  ~HeldFile();
  uint64_t size() const { return size_; }
  // The read lease is still held: nothing opened the file for writing.
  bool unchanged() const;
  // `fd` is open on this very file (device and inode), which holds size() bytes.
  bool is(int fd) const;

 private:
  int fd_ = -1;
  uint64_t device_ = 0, inode_ = 0, size_ = 0;
};

// A file written next to its final path and renamed over it by commit().
// Destroyed without commit(), it removes the temporary file: a failed command
// leaves nothing behind.
class AtomicOutput {
 public:
  static Result<AtomicOutput> create(const std::string& final_path);
  // Inside a bundle folder: the parent folder of `relative` is reached with no
  // symlink followed, and the rename replaces whatever entry has the final
  // name (a symlink is replaced, never written through).
  static Result<AtomicOutput> create_in(const BundleDir& dir, const std::string& relative);

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

  // Right after create: from now on, any other process's open of the
  // temporary file is noticed (a write lease). false where the file system
  // grants no leases (NFS, some overlays): finish() then holds nothing.
  bool guard_writes();
  // After the last write: fsyncs and closes the file (commit() then only
  // renames it), and when guard_writes() held to the end, keeps it open for
  // reading (HeldFile), so that its bytes provably stay the bytes written;
  // null where they cannot be proven so (a caller then hashes the file).
  Result<std::shared_ptr<const HeldFile>> finish();

  // fsyncs (unless finish() did), renames over final_path and fsyncs the folder.
  Status commit();

 private:
  static Result<AtomicOutput> create_at(int dir_fd, const std::string& dir_text, const std::string& name);
  void discard();
  std::string final_path_;
  std::string temp_path_;
  std::string final_name_;  // inside dir_fd_
  std::string temp_name_;
  int dir_fd_ = -1;
  int fd_ = -1;
  int cleanup_slot_ = -1;  // register_temp_path
  uint64_t position_ = 0;
  bool finished_ = false;  // finish(): the file is synced and fd_ closed; the temporary file remains
  bool guarded_ = false;   // guard_writes() took the write lease
};

// A bundle folder, held open: every file inside is reached relative to its
// descriptor with no symlink followed (openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, or one openat with O_NOFOLLOW per path component
// where the kernel lacks openat2), so a link in a bundle can neither make
// ptbundle read a file outside it nor write through it. Only regular files
// and folders are accepted inside; the folder itself may be reached through
// a symlink, as any path given on the command line.
class BundleDir {
 public:
  enum class Kind { Missing, File, Folder, Symlink, Other };

  static Result<BundleDir> open(const std::string& path);
  // Creates the folder (and missing parents) first.
  static Result<BundleDir> open_or_create(const std::string& path);

  BundleDir() = default;
  BundleDir(BundleDir&& other) noexcept;
  BundleDir& operator=(BundleDir&& other) noexcept;
  BundleDir(const BundleDir&) = delete;
  BundleDir& operator=(const BundleDir&) = delete;
  ~BundleDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // "<path>/<relative>", for messages.
  std::string display(const std::string& relative) const;

  // Opens `relative` (a path of '/'-separated names, none empty, "." or "..")
  // read-only with O_NONBLOCK; a regular file (or, with folder, a folder) only.
  Result<int> open_fd(const std::string& relative, bool folder = false) const;
  // What is at `relative`, without following a final symlink.
  Result<Kind> kind(const std::string& relative) const;
  // Creates the folder `relative` (one level) unless it is one already;
  // refuses a symlink or a file in its place.
  Status make_folder(const std::string& relative) const;
  // Removes a file (a symlink is removed itself); missing is fine.
  Status remove_file(const std::string& relative) const;
  // Names in the folder `relative` ("" for the bundle folder), sorted.
  Result<std::vector<std::string>> list(const std::string& relative) const;

 private:
  std::string path_;
  int fd_ = -1;
};

// Paths removed if the process is stopped by SIGINT, SIGTERM or SIGHUP: the
// handler unlinks every registered path (a folder with what is in it, two
// levels deep) using async-signal-safe calls only, then re-raises the signal
// with its default action. A path that is not absolute is taken relative to
// the working folder at registration. Returns a slot, or -1 when the table is full.
int register_temp_path(const std::string& path, bool folder = false);
void unregister_temp_path(int slot);

// A point where a test may stop the process, as a power cut or a signal
// would: writers call it before each rename of a transaction, readers where
// they have opened their inputs and not yet checked them. It does nothing
// unless a test program installed a hook (base/test_seams.h); the shipped
// binaries install none.
void test_kill_point(const std::string& step);

// Writes a whole small file atomically.
Status write_file_atomically(const std::string& path, Bytes data);
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ptb
