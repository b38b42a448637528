// BundleDir: files inside a bundle folder reached relative to its descriptor,
// with no symlink followed at any component.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ptbundle/base/file.h"

namespace ptb {
namespace {

std::string errno_text(int code) { return std::strerror(code); }

// '/'-separated names; none empty, "." or "..": what a manifest may name.
std::vector<std::string> components(const std::string& relative) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t slash = relative.find('/', start);
    out.push_back(relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

bool safe_relative(const std::string& relative) {
  if (relative.empty() || relative.front() == '/') return false;
  for (const auto& name : components(relative))
    if (name.empty() || name == "." || name == "..") return false;
  return true;
}

// The first component of `relative` (as a prefix) that is a symlink, if any.
std::string symlink_on_the_way(int dir_fd, const std::string& relative) {
  size_t end = 0;
  while (end != std::string::npos) {
    end = relative.find('/', end + 1);
    std::string prefix = relative.substr(0, end);
    struct stat st {};
    if (::fstatat(dir_fd, prefix.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    if (S_ISLNK(st.st_mode)) return prefix;
  }
  return {};
}

std::atomic<bool> openat2_missing{false};

// openat2 confines the whole walk in one call; kernels before 5.6 (and
// sandboxes that filter the call) get one openat per component.
int open_beneath(int dir_fd, const std::string& relative, int flags) {
  if (!openat2_missing.load(std::memory_order_relaxed)) {
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, dir_fd, relative.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != ENOSYS && errno != EPERM && errno != E2BIG) return -1;
    openat2_missing.store(true, std::memory_order_relaxed);
  }
  auto names = components(relative);
  int current = dir_fd;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    int next = ::openat(current, names[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int saved = errno;
    if (current != dir_fd) ::close(current);
    if (next < 0) {
      errno = saved;
      return -1;
    }
    current = next;
  }
  int fd = ::openat(current, names.back().c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  int saved = errno;
  if (current != dir_fd) ::close(current);
  errno = saved;
  return fd;
}

constexpr const char* kOnlyFiles = "a bundle holds only regular files and folders, and ptbundle follows no link inside one";

}  // namespace

Result<BundleDir> BundleDir::open(const std::string& path) {
  BundleDir dir;
  dir.path_ = path.empty() ? std::string(".") : path;
  int fd = ::open(dir.path_.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int code = errno;
    if (code == ENOTDIR) return io_error(dir.path_ + ": is not a folder; expected a bundle folder");
    return io_error(dir.path_ + ": cannot open the folder: " + errno_text(code));
  }
  dir.fd_ = fd;
  return dir;
}

Result<BundleDir> BundleDir::open_or_create(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec && !std::filesystem::is_directory(path))
    return io_error(path + ": cannot create the folder: " + ec.message());
  return open(path);
}

BundleDir::BundleDir(BundleDir&& other) noexcept { *this = std::move(other); }

BundleDir& BundleDir::operator=(BundleDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

BundleDir::~BundleDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string BundleDir::display(const std::string& relative) const {
  if (relative.empty()) return path_;
  return path_.ends_with('/') ? path_ + relative : path_ + "/" + relative;
}

Result<int> BundleDir::open_fd(const std::string& relative, bool folder) const {
  const std::string shown = display(relative);
  if (!safe_relative(relative)) return invalid(shown + ": not a plain path inside the bundle folder");
  int fd = open_beneath(fd_, relative, O_RDONLY | O_NONBLOCK | (folder ? O_DIRECTORY : 0));
  if (fd < 0) {
    int code = errno;
    if (code == ELOOP || code == EXDEV || code == ENOTDIR) {
      std::string link = symlink_on_the_way(fd_, relative);
      if (!link.empty()) return invalid(display(link) + ": is a symbolic link; " + kOnlyFiles);
    }
    if (code == ENOTDIR && folder) return invalid(shown + ": is not a folder; expected a folder");
    return io_error(shown + ": cannot open: " + errno_text(code));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int code = errno;
    ::close(fd);
    return io_error(shown + ": cannot stat: " + errno_text(code));
  }
  bool right = folder ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  if (!right) {
    ::close(fd);
    return invalid(shown + ": is " + file_type_text(st.st_mode) + "; expected " +
                   (folder ? "a folder" : "a regular file") + " (" + kOnlyFiles + ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Result<BundleDir::Kind> BundleDir::kind(const std::string& relative) const {
  if (!safe_relative(relative)) return invalid(display(relative) + ": not a plain path inside the bundle folder");
  auto slash = relative.rfind('/');
  int parent = fd_;
  if (slash != std::string::npos) {
    auto opened = open_fd(relative.substr(0, slash), true);
    if (!opened.ok()) {
      // A missing parent means a missing file; a link or a file on the way is an error.
      struct stat st {};
      if (::fstatat(fd_, relative.substr(0, slash).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        return Kind::Missing;
      return opened.take_error();
    }
    parent = *opened;
  }
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  struct stat st {};
  int rc = ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW);
  int code = errno;
  if (parent != fd_) ::close(parent);
  if (rc != 0) {
    if (code == ENOENT) return Kind::Missing;
    return io_error(display(relative) + ": cannot stat: " + errno_text(code));
  }
  if (S_ISREG(st.st_mode)) return Kind::File;
  if (S_ISDIR(st.st_mode)) return Kind::Folder;
  if (S_ISLNK(st.st_mode)) return Kind::Symlink;
  return Kind::Other;
}

Status BundleDir::make_folder(const std::string& relative) const {
  PTB_TRY(Kind kind, this->kind(relative));
  if (kind == Kind::Folder) return {};
  if (kind == Kind::Symlink) return invalid(display(relative) + ": is a symbolic link; " + kOnlyFiles);
  if (kind != Kind::Missing) return io_error(display(relative) + ": exists and is not a folder");
  auto slash = relative.rfind('/');
  int parent = fd_;
  if (slash != std::string::npos) {
    PTB_TRY(parent, open_fd(relative.substr(0, slash), true));
  }
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  int rc = ::mkdirat(parent, name.c_str(), 0755);
  int code = errno;
  if (parent != fd_) ::close(parent);
  if (rc != 0 && code != EEXIST) return io_error(display(relative) + ": cannot create the folder: " + errno_text(code));
  return {};
}

Status BundleDir::remove_file(const std::string& relative) const {
  if (!safe_relative(relative)) return invalid(display(relative) + ": not a plain path inside the bundle folder");
  auto slash = relative.rfind('/');
  int parent = fd_;
  if (slash != std::string::npos) {
    auto opened = open_fd(relative.substr(0, slash), true);
    if (!opened.ok()) return {};  // no folder, no file in it (or a link: never followed)
    parent = *opened;
  }
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  int rc = ::unlinkat(parent, name.c_str(), 0);
  int code = errno;
  if (parent != fd_) ::close(parent);
  if (rc != 0 && code != ENOENT) return io_error(display(relative) + ": cannot remove: " + errno_text(code));
  return {};
}

Result<std::vector<std::string>> BundleDir::list(const std::string& relative) const {
  int fd = -1;
  if (relative.empty()) {
    fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_error(path_ + ": cannot list the folder: " + errno_text(errno));
  } else {
    PTB_TRY(fd, open_fd(relative, true));
  }
  DIR* stream = ::fdopendir(fd);
  if (!stream) {
    ::close(fd);
    return io_error(display(relative) + ": cannot list the folder: " + errno_text(errno));
  }
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(stream)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(stream);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ptb
