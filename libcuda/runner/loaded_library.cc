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
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "ptbundle/base/environment.h"


namespace ptb::detail {
namespace {

std::string errno_text() { return std::strerror(errno); }

// A folder only this user can enter (mkdtemp makes it 0700) and the files
// written into it; all are removed when this goes out of scope.
class PrivateFolder {
 public:
  static Result<PrivateFolder> create() {
    std::string pattern = temporary_folder() + "/ptbundle-run-XXXXXX";
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
      : path_(std::exchange(other.path_, {})), files_(std::exchange(other.files_, {})) {}
  PrivateFolder& operator=(PrivateFolder&&) = delete;
  ~PrivateFolder() {
    for (const std::string& file : files_) ::unlink(file.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }

  Result<std::string> write(const std::string& name, Bytes bytes) {
    const std::string file = path_ + "/" + name;
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0) return io_error(file + ": cannot create: " + errno_text());
    files_.push_back(file);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string why = errno_text();
        ::close(fd);
        return io_error(file + ": cannot write: " + why);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) return io_error(file + ": cannot write: " + errno_text());
    return file;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// The loader knows a library by its file's device and inode, not its path.
// A link_libtorch=False library defines STB_GNU_UNIQUE symbols, so dlclose
// never unmaps it; once its file is removed, a file system may give the next
// library's file the same inode, and dlopen would then hand back the old
// library: the next part would run the first part's kernels over its own
// weights. So a handle whose link map names another path is not ours: it is
// closed, and the bytes are written again beside the first copy (which, still
// present, keeps its inode) until the loader maps ours.
Result<void*> open_fresh(PrivateFolder& folder, const std::string& file_name, Bytes bytes, const std::string& origin) {
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    PTB_TRY(std::string path, folder.write(attempt ? std::to_string(attempt) + "-" + file_name : file_name, bytes));
    // RTLD_NOW: a missing symbol fails here, with its name, rather than at
    // the first call; RTLD_LOCAL: two parts' libraries export the same names.
    // Not RTLD_DEEPBIND: a link_libtorch=False library opened with it binds
    // its own libstdc++'s locale functions to facet ids numbered by another
    // copy, and crashes in its first std::regex.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::string why = ::dlerror();
      std::string hint;
      if (why.find("failed to map segment") != std::string::npos) {
        hint = "; the temporary folder may be on a file system mounted noexec: set TMPDIR to another";
      }
      return invalid(origin + ": cannot load the library: " + why + hint);
    }
    link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && path == map->l_name) return handle;
    ::dlclose(handle);
  }
  return invalid(origin + ": cannot load the library: the loader returned a library already loaded from another "
                 "file " + std::to_string(kAttempts) + " times (reused file identities in " + temporary_folder() + ")");
}

// The libraries this process has open, by the SHA-256 of their bytes: the
// same bytes opened again (another part with the same library, the same part
// loaded again, per-FQN and blob weights side by side) share one dlopen
// rather than mapping a second copy. AOTInductor's model containers are
// independent of each other within one library.
struct OpenLibraries {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<void>> by_digest;
  // The first library opened that carries its own copy of libstdc++, while
  // the process has no shared libstdc++ to bind such copies to (below).
  std::string private_libstdcxx_digest;
};

OpenLibraries& open_libraries() {
  static OpenLibraries* libraries = new OpenLibraries;  // never destroyed: used until exit
  return *libraries;
}

// A library built with link_libtorch=False links libstdc++ statically and
// exports all of it. Opened RTLD_LOCAL, it binds each libstdc++ symbol to the
// first definition in the global scope, else to its own copy. Two things make
// its copy unsafe to use beside another such library's:
//   - the locale facet ids that are template members (collate<char>::id,
//     numpunct<char>::id, ...) are STB_GNU_UNIQUE, so every library in the
//     process shares the first one's, numbered by the first library's
//     counter;
//   - the ids that are not templates (ctype<char>::id, codecvt<...>::id) and
//     the counter itself stay the library's own.
// The second library's classic locale then files two facets under one index:
// its first std::regex (parse_device_str, inside
// AOTInductorModelContainerCreateWithDevice) calls codecvt<char16_t>::
// do_unshift as if it were collate<char>::do_transform and crashes. This
// happens only where libstdc++.so.6 is not in the global scope (a program
// that links libstdc++ statically); where it is, every such library binds its
// facet ids and locale functions to libstdc++.so.6 and they agree. So the
// shared libstdc++ is made global before the first library is opened; with
// none on the machine, a second library with its own libstdc++ is refused
// instead of crashing. A test acts as a machine without libstdc++.so.6
// through LoadedLibrary::assume_no_shared_libstdcxx.
std::atomic<bool> no_shared_libstdcxx_assumed{false};

bool shared_libstdcxx_is_global() {
  if (no_shared_libstdcxx_assumed.load(std::memory_order_acquire)) return false;
  static const bool global = ::dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  return global;
}

// Whether the opened library defines libstdc++ itself rather than importing it.
bool carries_own_libstdcxx(void* handle) {
  void* classic = ::dlsym(handle, "_ZNSt6locale7classicEv");  // std::locale::classic()
  link_map* map = nullptr;
  Dl_info info{};
  return classic && ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && ::dladdr(classic, &info) &&
         info.dli_fbase && std::strcmp(info.dli_fname, map->l_name) == 0;
}

}  // namespace

void LoadedLibrary::assume_no_shared_libstdcxx() {
  no_shared_libstdcxx_assumed.store(true, std::memory_order_release);
}

Result<LoadedLibrary> LoadedLibrary::open(Bytes bytes, const std::string& digest, const std::string& file_name,
                                          const std::string& origin) {
  OpenLibraries& libraries = open_libraries();
  std::lock_guard lock(libraries.mutex);
  LoadedLibrary library;
  if (auto found = libraries.by_digest.find(digest); found != libraries.by_digest.end()) {
    library.handle_ = found->second.lock();
    if (library.handle_) return library;
  }
  const bool libstdcxx_shared = shared_libstdcxx_is_global();
  PTB_TRY(PrivateFolder folder, PrivateFolder::create());
  PTB_TRY(void* handle, open_fresh(folder, file_name, bytes, origin));
  library.handle_ = std::shared_ptr<void>(handle, [](void* opened) { ::dlclose(opened); });
  if (!libstdcxx_shared && carries_own_libstdcxx(handle)) {
    if (libraries.private_libstdcxx_digest.empty()) {
      libraries.private_libstdcxx_digest = digest;
    } else if (libraries.private_libstdcxx_digest != digest) {
      return invalid(origin + ": this library carries its own libstdc++, as another library this process has "
                     "already loaded does, and this machine has no shared libstdc++.so.6 for both to bind to: "
                     "their locale tables would conflict. Install libstdc++6, or run each part in its own process");
    }
  }
  libraries.by_digest[digest] = library.handle_;
  return library;  // the folder and its file are removed here; the mapping stays
}

void* LoadedLibrary::symbol(const char* name) const { return handle_ ? ::dlsym(handle_.get(), name) : nullptr; }

uintptr_t LoadedLibrary::load_bias() const {
  link_map* map = nullptr;
  if (!handle_ || ::dlinfo(handle_.get(), RTLD_DI_LINKMAP, &map) != 0 || !map) return 0;
  return static_cast<uintptr_t>(map->l_addr);
}

}  // namespace ptb::detail
