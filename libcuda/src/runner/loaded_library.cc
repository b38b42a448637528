#include "runner/loaded_library.h"

#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "ptbundle/base/sha256.h"
#include "ptbundle/cuda/runner_config.h"

namespace ptb::detail {
namespace {

std::string errno_text() { return std::strerror(errno); }

// A folder only this user can enter (mkdtemp makes it 0700), with at most one
// file in it; both are removed when this goes out of scope.
class PrivateFolder {
 public:
  static Result<PrivateFolder> create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/ptbundle-run-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      return io_error(pattern.substr(0, pattern.size() - 6) + "*: cannot create a private folder: " + errno_text() +
                      " (set TMPDIR to a writable folder)");
    }
    PrivateFolder folder;
    folder.path_ = pattern;
    return folder;
  }

  PrivateFolder() = default;
  PrivateFolder(PrivateFolder&& other) noexcept
      : path_(std::exchange(other.path_, {})), file_(std::exchange(other.file_, {})) {}
  PrivateFolder& operator=(PrivateFolder&&) = delete;
  ~PrivateFolder() {
    if (!file_.empty()) ::unlink(file_.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }

  Result<std::string> write(const std::string& name, Bytes bytes) {
    file_ = path_ + "/" + name;
    int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0) return io_error(file_ + ": cannot create: " + errno_text());
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string why = errno_text();
        ::close(fd);
        return io_error(file_ + ": cannot write: " + why);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) return io_error(file_ + ": cannot write: " + errno_text());
    return file_;
  }

 private:
  std::string path_;
  std::string file_;
};

// The libraries this process has open, by the SHA-256 of their bytes. A
// second model of the same library (another part with the same bytes, the
// same part loaded again, per-FQN and blob weights side by side) shares the
// first one's dlopen: on the H200 machine a second copy of a link_libtorch=False
// library, opened while the first had run, crashed in std::regex inside
// AOTInductorModelContainerCreateWithDevice, while a second container of the
// same copy did not. Such a library links libstdc++ statically and exports
// all of it; whatever it keeps process-wide, one copy of each library keeps
// it once. AOTInductor's model containers are independent of each other
// within one library.
struct OpenLibraries {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<void>> by_digest;
};

OpenLibraries& open_libraries() {
  static OpenLibraries* libraries = new OpenLibraries;  // never destroyed: used until exit
  return *libraries;
}

}  // namespace

Result<LoadedLibrary> LoadedLibrary::open(Bytes bytes, const std::string& file_name, const std::string& origin) {
  const std::string digest = to_hex(sha256(bytes));
  OpenLibraries& libraries = open_libraries();
  std::lock_guard lock(libraries.mutex);
  LoadedLibrary library;
  if (auto found = libraries.by_digest.find(digest); found != libraries.by_digest.end()) {
    library.handle_ = found->second.lock();
    if (library.handle_) return library;
  }
  PTB_TRY(PrivateFolder folder, PrivateFolder::create());
  PTB_TRY(std::string path, folder.write(file_name, bytes));
  // RTLD_NOW: a missing symbol fails here, with its name, rather than at
  // the first call; RTLD_LOCAL: two parts' libraries export the same names.
  // Not RTLD_DEEPBIND: a link_libtorch=False library opened with it crashed
  // in its first std::regex on the H200 machine.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string why = ::dlerror();
    std::string hint;
    if (why.find("failed to map segment") != std::string::npos) {
      hint = "; the temporary folder may be on a file system mounted noexec: set TMPDIR to another";
    }
    return invalid(origin + ": cannot load the library: " + why + hint);
  }
  library.handle_ = std::shared_ptr<void>(handle, [](void* opened) { ::dlclose(opened); });
  libraries.by_digest[digest] = library.handle_;
  return library;  // the folder and its file are removed here; the mapping stays
}

void* LoadedLibrary::symbol(const char* name) const { return handle_ ? ::dlsym(handle_.get(), name) : nullptr; }

uintptr_t LoadedLibrary::load_bias() const {
  link_map* map = nullptr;
  if (!handle_ || ::dlinfo(handle_.get(), RTLD_DI_LINKMAP, &map) != 0 || !map) return 0;
  return static_cast<uintptr_t>(map->l_addr);
}

std::string make_libtorch_global() {
  static const std::string missing = [] {
    std::string failures;
    for (const char* name : {"libc10.so", "libc10_cuda.so", "libtorch_cpu.so", "libtorch_cuda.so", "libtorch.so"}) {
      // Already loaded (as this program's dependency): promote it to global.
      if (::dlopen(name, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) continue;
      std::string path = std::string(PTB_LIBTORCH_LIB_DIR) + "/" + name;
      if (!::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) failures += std::string(failures.empty() ? "" : "; ") + ::dlerror();
    }
    return failures;
  }();
  return missing;
}

}  // namespace ptb::detail
