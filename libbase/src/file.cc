#include "ptbundle/base/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "ptbundle/base/interrupt.h"
#include "ptbundle/base/mapping_guard.h"

namespace ptb {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

std::string file_type_text(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a folder";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "not a regular file";
}

Result<int> open_regular_input(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto error = io_error(path + ": cannot stat: " + errno_text());
    ::close(fd);
    return error;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path + ": is " + file_type_text(st.st_mode) + "; expected a regular file");
  }
  // Reads of a regular file never block; the flag only mattered for the open.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  PTB_TRY(int fd, open_regular_input(path));
  return from_fd(fd, path);
}

Result<MappedFile> MappedFile::open_in(const BundleDir& dir, const std::string& relative) {
  PTB_TRY(int fd, dir.open_fd(relative));
  return from_fd(fd, dir.display(relative));
}

Result<MappedFile> MappedFile::from_fd(int fd, const std::string& path) {
  MappedFile file;
  file.path_ = path;
  file.fd_ = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(path + ": cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) return io_error(path + ": is " + file_type_text(st.st_mode) + "; expected a regular file");
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ > 0) {
    void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) return io_error(path + ": cannot map: " + errno_text());
    file.data_ = static_cast<const uint8_t*>(data);
    guard_mapping(data, file.size_, path);
    test_shrink_point(path);
  }
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    // Not this->~MappedFile(): that would also end path_'s lifetime, and the
    // assignment below would then write into a destroyed string.
    unguard_mapping(data_);
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
  unguard_mapping(data_);
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
  const std::string dir = parent_dir(final_path);
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return io_error(final_path + ": cannot open the folder to write into: " + errno_text());
  PTB_TRY(auto out, create_at(dir_fd, dir, std::filesystem::path(final_path).filename().string()));
  out.final_path_ = final_path;
  return out;
}

Result<AtomicOutput> AtomicOutput::create_in(const BundleDir& dir, const std::string& relative) {
  auto slash = relative.rfind('/');
  std::string parent = slash == std::string::npos ? std::string() : relative.substr(0, slash);
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  int dir_fd = -1;
  if (parent.empty()) {
    dir_fd = ::fcntl(dir.fd(), F_DUPFD_CLOEXEC, 0);
    if (dir_fd < 0) return io_error(dir.path() + ": cannot duplicate the folder's descriptor: " + errno_text());
  } else {
    PTB_TRY(dir_fd, dir.open_fd(parent, /*folder=*/true));
  }
  PTB_TRY(auto out, create_at(dir_fd, parent.empty() ? dir.path() : dir.display(parent), name));
  out.final_path_ = dir.display(relative);
  return out;
}

// Takes ownership of dir_fd. The temporary name is ".<name>.XXXXXX.tmp",
// which verify and the next writer recognise as a leftover.
Result<AtomicOutput> AtomicOutput::create_at(int dir_fd, const std::string& dir_text, const std::string& name) {
  AtomicOutput out;
  out.dir_fd_ = dir_fd;
  out.final_name_ = name;
  static const char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string suffix;
    for (int i = 0; i < 6; ++i) suffix += kLetters[random() % (sizeof kLetters - 1)];
    std::string temp = "." + name + "." + suffix + ".tmp";
    // A signal between the create and the registration would leave the
    // file behind (2 of 1,000 SIGTERMs in scripts/race-loops did): held
    // back until the signal handler knows the name.
    DeferInterrupts defer;
    int fd = ::openat(dir_fd, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return io_error(dir_text + "/" + name + ": cannot create a temporary file beside it: " + errno_text());
    out.fd_ = fd;
    out.temp_name_ = temp;
    out.temp_path_ = dir_text + "/" + temp;
    // By descriptor and name: removed on SIGINT even where the full path is
    // longer than PATH_MAX.
    out.cleanup_slot_ = register_temp_at(dir_fd, temp);
    return out;
  }
  return io_error(dir_text + "/" + name + ": cannot create a temporary file beside it: every name tried exists");
}

AtomicOutput::AtomicOutput(AtomicOutput&& other) noexcept { *this = std::move(other); }

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& other) noexcept {
  if (this != &other) {
    discard();
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    final_name_ = std::move(other.final_name_);
    temp_name_ = std::move(other.temp_name_);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
    fd_ = std::exchange(other.fd_, -1);
    cleanup_slot_ = std::exchange(other.cleanup_slot_, -1);
    position_ = std::exchange(other.position_, 0);
    finished_ = std::exchange(other.finished_, false);
    guarded_ = std::exchange(other.guarded_, false);
  }
  return *this;
}

AtomicOutput::~AtomicOutput() { discard(); }

void AtomicOutput::discard() {
  if (fd_ >= 0 || finished_) {
    if (fd_ >= 0) ::close(fd_);
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    fd_ = -1;
    finished_ = false;
  }
  unregister_temp_path(std::exchange(cleanup_slot_, -1));
  if (dir_fd_ >= 0) ::close(std::exchange(dir_fd_, -1));
}

Status AtomicOutput::write(Bytes data) {
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(final_path_ + ": write failed: " + errno_text() +
                      (errno == EFBIG ? " (past the process's file size limit, ulimit -f, or the file system's)" : ""));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const uint64_t before = position_;
  position_ += data.size();
  // Every output is fsynced before it is placed: the disk is asked to start
  // writing each whole 16 MiB as soon as it is written, so that the writing
  // overlaps the work producing the bytes (a download, a hash) and the fsync
  // finds little left.
  constexpr uint64_t kWriteback = 16ull << 20;
  const uint64_t from = before / kWriteback * kWriteback, to = position_ / kWriteback * kWriteback;
  if (to > from) ::sync_file_range(fd_, static_cast<off64_t>(from), static_cast<off64_t>(to - from), SYNC_FILE_RANGE_WRITE);
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
    // The source ended early: it shrank after it was mapped.
    if (n == 0) PTB_CHECK(check_unchanged(source));
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

namespace {

// A lease's break is announced by a signal to its holder, SIGIO by default,
// whose default action ends the process. SIGURG, ignored by default, is
// asked for instead, and the owner cleared once the lease is set (setting a
// lease makes this process the owner), so that a break only shows in
// F_GETLEASE: it is a fact this process checks, never an event it handles.
bool take_lease(int fd, int type) {
  if (::fcntl(fd, F_SETSIG, SIGURG) != 0) return false;
  if (::fcntl(fd, F_SETLEASE, type) != 0) return false;
  ::fcntl(fd, F_SETOWN, 0);
  return true;
}

bool same_change_time(const struct stat& a, const struct stat& b) {
  return a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

}  // namespace

HeldFile::~HeldFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the lease
}

bool HeldFile::unchanged() const { return ::fcntl(fd_, F_GETLEASE) == F_RDLCK; }

bool HeldFile::is(int fd) const {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_dev) == device_ &&
         static_cast<uint64_t>(st.st_ino) == inode_ && static_cast<uint64_t>(st.st_size) == size_;
}

bool AtomicOutput::guard_writes() {
  guarded_ = fd_ >= 0 && position_ == 0 && take_lease(fd_, F_WRLCK);
  return guarded_;
}

Result<std::shared_ptr<const HeldFile>> AtomicOutput::finish() {
  if (fd_ < 0) return io_error(final_path_ + ": output already closed");
  std::shared_ptr<const HeldFile> held;
  // Still the write lease: no other process opened the file since it was
  // created. The change time read here is the last write's; reading it makes
  // the kernel give the next change a later one (fine-grained timestamps).
  struct stat written {};
  const bool unopened = guarded_ && ::fcntl(fd_, F_GETLEASE) == F_WRLCK && ::fstat(fd_, &written) == 0;
  int reader = -1;
  if (unopened) {
    // A read lease needs the file open for reading and by no writer: ours
    // is given up and a reading descriptor opened in its place. A write
    // between the two changes the change time, compared below.
    ::fcntl(fd_, F_SETLEASE, F_UNLCK);
    reader = ::openat(dir_fd_, temp_name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  }
  if (::fsync(fd_) != 0) {
    if (reader >= 0) ::close(reader);
    return io_error(final_path_ + ": fsync failed: " + errno_text());
  }
  const int writer = std::exchange(fd_, -1);
  finished_ = true;
  if (::close(writer) != 0) {
    if (reader >= 0) ::close(reader);
    return io_error(final_path_ + ": close failed: " + errno_text());
  }
  if (reader >= 0) {
    struct stat now {};
    if (take_lease(reader, F_RDLCK) && ::fstat(reader, &now) == 0 && now.st_dev == written.st_dev &&
        now.st_ino == written.st_ino && static_cast<uint64_t>(now.st_size) == position_ && same_change_time(now, written)) {
      held = std::make_shared<const HeldFile>(reader, now.st_dev, now.st_ino, position_);
    } else {
      ::close(reader);
    }
  }
  return held;
}

Status AtomicOutput::commit() {
  if (fd_ < 0 && !finished_) return io_error(final_path_ + ": output already closed");
  // Made from an input that shrank while read (zeros where its bytes were):
  // never put in place.
  if (auto changed = changed_mapped_file()) {
    Error error = changed_while_read(*changed);
    error.message += "; not writing " + final_path_;
    return error;
  }
  if (!finished_) {
    if (::fsync(fd_) != 0) return io_error(final_path_ + ": fsync failed: " + errno_text());
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
      return io_error(final_path_ + ": close failed: " + errno_text());
    }
    fd_ = -1;
  }
  finished_ = false;
  // renameat replaces the entry itself: a symlink of the final name is
  // replaced, never followed.
  if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, final_name_.c_str()) != 0) {
    auto error = io_error(final_path_ + ": cannot rename the temporary file into place: " + errno_text());
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    return error;
  }
  unregister_temp_path(std::exchange(cleanup_slot_, -1));
  // Some file systems (tmpfs in containers) refuse fsync on folders; the
  // rename has happened either way.
  ::fsync(dir_fd_);
  ::close(std::exchange(dir_fd_, -1));
  return {};
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
