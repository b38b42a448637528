#include "runner/kernel_folder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "ptbundle/base/environment.h"
#include "ptbundle/base/kernel_file_name.h"

namespace ptb::detail {
namespace {

std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, Bytes bytes, const std::string& file) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error(file + ": cannot write: " + errno_text());
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

Result<KernelFolder> KernelFolder::create(const std::vector<KernelFileBytes>& files, const std::string& label) {
  KernelFolder folder;
  if (files.empty()) return folder;
  for (const KernelFileBytes& file : files) PTB_CHECK(check_kernel_file_name(file.name, label));
  std::string pattern = temporary_folder() + "/ptbundle-kernels-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    return io_error(label + ": " + pattern.substr(0, pattern.size() - 6) +
                    "*: cannot create a private folder for the kernel files: " + errno_text() +
                    " (set TMPDIR to a writable folder)");
  }
  folder.path_ = pattern;
  const int dir = ::open(folder.path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return io_error(label + ": " + folder.path_ + ": cannot open: " + errno_text());
  for (const KernelFileBytes& file : files) {
    const std::string shown = folder.path_ + "/" + file.name;
    const int fd = ::openat(dir, file.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      const std::string why = errno == EEXIST ? "the part names this kernel file twice" : errno_text();
      ::close(dir);
      return io_error(label + ": " + shown + ": cannot create: " + why);
    }
    folder.names_.push_back(file.name);
    Status written = write_all(fd, file.bytes, shown);
    if (::close(fd) != 0 && written.ok()) written = io_error(shown + ": cannot write: " + errno_text());
    if (!written.ok()) {
      ::close(dir);
      return with_context(label, written.take_error());
    }
  }
  ::close(dir);
  return folder;
}

KernelFolder::KernelFolder(KernelFolder&& other) noexcept
    : path_(std::exchange(other.path_, {})), names_(std::exchange(other.names_, {})) {}

KernelFolder& KernelFolder::operator=(KernelFolder&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    names_ = std::exchange(other.names_, {});
  }
  return *this;
}

KernelFolder::~KernelFolder() { remove(); }

void KernelFolder::remove() {
  if (path_.empty()) return;
  for (const std::string& name : names_) ::unlink((path_ + "/" + name).c_str());
  ::rmdir(path_.c_str());
  path_.clear();
  names_.clear();
}

}  // namespace ptb::detail
