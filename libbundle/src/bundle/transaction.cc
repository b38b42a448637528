#include "ptbundle/bundle/transaction.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include "ptbundle/base/interrupt.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJournalHeader = "ptbundle pending 1";
constexpr uint64_t kMaxJournalBytes = 4 << 20;

std::set<std::string> listed_paths(const Manifest* manifest) {
  std::set<std::string> out;
  if (!manifest) return out;
  for (const auto& part : manifest->parts)
    for (const auto& file : part.files) out.insert(file.path);
  if (manifest->tune) out.insert(manifest->tune->path);
  return out;
}

// Journal lines are paths the writer chose, but the file may have been
// edited: only plain relative paths of .pte/.ptd files, and tune files, are
// ever removed.
bool removable_path(const std::string& path) {
  if (is_tune_file_path(path)) return true;
  if (path.empty() || path.front() == '/' || path.size() > 1024) return false;
  if (!path.ends_with(".pte") && !path.ends_with(".ptd")) return false;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    std::string name = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (name.empty() || name == "." || name == ".." || name.front() == '.') return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

std::vector<std::string> journal_paths(const BundleDir& dir) {
  std::vector<std::string> out;
  auto file = MappedFile::open_in(dir, kJournalFileName);
  if (!file.ok() || file->size() > kMaxJournalBytes) return out;
  std::string text(reinterpret_cast<const char*>(file->bytes().data()), file->size());
  size_t start = 0;
  bool header = true;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    if (header) {
      if (line != kJournalHeader) return {};
      header = false;
      continue;
    }
    if (removable_path(line)) out.push_back(line);
  }
  return out;
}

std::string errno_text() { return std::strerror(errno); }

// Who holds a lock on the file open at `fd`, from /proc/locks: "held by pid
// 4721 (flock, shared)". The pid is where the kernel recorded the lock's taker
// (in this process's pid namespace); "" when /proc/locks is not readable or
// names no holder other than this process.
std::string lock_holders(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "";
  std::ifstream locks("/proc/locks");
  std::string line, holders;
  size_t found = 0;
  for (int lines = 0; lines < 100000 && std::getline(locks, line); ++lines) {
    std::istringstream fields(line);
    std::string number, type, advisory, kind, device;
    long pid = 0;
    if (!(fields >> number >> type) || type == "->") continue;  // a waiter, not a holder
    if (!(fields >> advisory >> kind >> pid >> device)) continue;
    unsigned major_number = 0, minor_number = 0;
    unsigned long long inode = 0;
    if (std::sscanf(device.c_str(), "%x:%x:%llu", &major_number, &minor_number, &inode) != 3) continue;
    if (major_number != major(st.st_dev) || minor_number != minor(st.st_dev) || inode != st.st_ino) continue;
    if (pid == ::getpid()) continue;
    if (++found > 4) continue;
    std::string name;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    if (!std::getline(comm, name)) name = "exited, or another user's";
    holders += (holders.empty() ? "" : ", ") + std::string("pid ") + std::to_string(pid) + " (" + printable(name) + ", " +
               (kind == "WRITE" ? "exclusive" : "shared") + ")";
  }
  if (found > 4) holders += " and " + std::to_string(found - 4) + " more";
  return holders.empty() ? "" : "held by " + holders;
}

// " (held by pid 4721 (flock, shared))", or "" when the holders are unknown.
std::string holders_clause(int fd) {
  std::string holders = lock_holders(fd);
  return holders.empty() ? "" : " (" + holders + ")";
}

// A reader's courtesy to a waiting writer: a writer holds .ptbundle.lock from
// the moment it starts waiting for the folder's lock, so a reader that finds
// it held waits (up to kWriterFirst) before taking its shared lock. Readers
// that come one after another then cannot keep the folder locked forever.
// Bounded, so that a lock file someone else holds delays a reader only so
// long; the reader never creates the file.
constexpr auto kWriterFirst = std::chrono::seconds(10);

void let_waiting_writer_first(const BundleDir& dir, std::chrono::steady_clock::time_point deadline) {
  const auto until = std::min(deadline, std::chrono::steady_clock::now() + kWriterFirst);
  for (;;) {
    int fd = ::openat(dir.fd(), kLockFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    if (!held || std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A descriptor of its own for the folder (flock belongs to the open file
// description, so the BundleDir's descriptor stays free of it), locked with
// `operation` (LOCK_SH or LOCK_EX), polling until `deadline`. -1 where the
// file system has no flock on folders (NFS emulates flock with fcntl locks,
// which a read-only descriptor cannot take exclusively): writers are still
// serialised by .ptbundle.lock, and readers read unlocked as before.
Result<int> lock_folder(const BundleDir& dir, int operation, std::chrono::steady_clock::time_point deadline,
                        std::chrono::seconds wait) {
  int fd = ::openat(dir.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error(dir.path() + ": cannot open the folder to lock it: " + errno_text());
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      ::close(fd);
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string holders = holders_clause(fd);
      ::close(fd);
      return io_error(dir.path() + ": " +
                      (operation == LOCK_EX ? std::string("other processes hold this bundle's folder lock (verify, inspect, "
                                                          "run and merge hold it while reading this bundle)")
                                            : std::string("another ptbundle process is changing this bundle")) +
                      holders + "; waited " + std::to_string(wait.count()) +
                      " s (PTBUNDLE_LOCK_WAIT); try again when it has finished");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fd;
}

// The part a path names as part_file_path or part_target_program_path would
// ("testcases/enc@2.ptd" -> "enc"), if it is one of the manifest's parts and
// the path has that part's form for its role.
bool is_file_of_listed_part(const std::string& path, const Manifest& manifest) {
  std::string_view rest = path;
  std::optional<std::string> target;
  FileRole role = path.ends_with(".pte") ? FileRole::Program : FileRole::Data;
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    std::string folder(rest.substr(0, slash));
    if (folder == kTestcaseFolder && role == FileRole::Data) role = FileRole::Testcase;
    else if (is_gpu_target_name(folder) && role == FileRole::Program) target = folder;
    else return false;
    rest.remove_prefix(slash + 1);
  }
  std::string_view name = rest.substr(0, rest.rfind('.'));
  if (size_t at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
  const ManifestPart* part = manifest.find_part(std::string(name));
  return part && is_part_file_path(path, part->name, role, target);
}

}  // namespace

std::chrono::seconds bundle_lock_wait() {
  if (const char* text = std::getenv("PTBUNDLE_LOCK_WAIT")) {
    char* end = nullptr;
    long seconds = std::strtol(text, &end, 10);
    if (end != text && *end == 0 && seconds >= 0 && seconds <= 86400) return std::chrono::seconds(seconds);
  }
  return std::chrono::seconds(300);
}

bool is_temporary_name(const std::string& name) {
  // ".<name>.XXXXXX.tmp", the six of mkstemp's letters and digits.
  if (name.size() < 13 || name.front() != '.' || !name.ends_with(".tmp")) return false;
  if (name[name.size() - 11] != '.') return false;
  for (size_t i = name.size() - 10; i < name.size() - 4; ++i) {
    const char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

BundleLeftovers find_leftovers(const BundleDir& dir, const Manifest* manifest) {
  BundleLeftovers out;
  std::vector<std::string> folders{""};
  if (auto names = dir.list(""); names.ok()) {
    for (const auto& name : *names) {
      auto kind = dir.kind(name);
      if (!kind.ok()) continue;
      if (*kind == BundleDir::Kind::Folder && (name == kTestcaseFolder || is_gpu_target_name(name))) folders.push_back(name);
    }
  }
  for (const auto& folder : folders) {
    auto names = dir.list(folder);
    if (!names.ok()) continue;
    for (const auto& name : *names) {
      std::string relative = folder.empty() ? name : folder + "/" + name;
      if (is_temporary_name(name) && dir.kind(relative).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::File)
        out.temporary.push_back(relative);
    }
  }
  // A merge killed between renaming its staging folder into place and
  // removing the marker: the marker is a temporary like any other.
  if (dir.kind(kStagingMarkerName).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::File)
    out.temporary.push_back(kStagingMarkerName);
  if (dir.kind(kJournalFileName).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::File) {
    out.journal = true;
    const auto listed = listed_paths(manifest);
    for (const auto& path : journal_paths(dir)) {
      if (listed.count(path)) continue;
      if (dir.kind(path).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::Missing) continue;
      if ((manifest && is_file_of_listed_part(path, *manifest)) || is_tune_file_path(path)) out.pending.push_back(path);
      else out.unexplained.push_back(path);
    }
  }
  return out;
}

BundleReadLock& BundleReadLock::operator=(BundleReadLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

BundleReadLock::~BundleReadLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<BundleReadLock> acquire_read_lock(const BundleDir& dir, std::chrono::seconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  let_waiting_writer_first(dir, deadline);
  PTB_TRY(int fd, lock_folder(dir, LOCK_SH, deadline, wait));
  return BundleReadLock(fd);
}

bool lock_file_is_stale(const BundleDir& dir) {
  for (int look = 0; look < 20; ++look) {
    if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    int fd = ::openat(dir.fd(), kLockFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;  // gone: its writer finished
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return true;  // not a lock ptbundle makes: a leftover by any name
    }
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    if (held) return false;
  }
  return true;
}

Result<BundleTransaction> BundleTransaction::begin(const std::string& bundle_dir, bool create, std::chrono::seconds wait) {
  BundleTransaction t;
  std::error_code ec;
  t.created_ = create && !fs::exists(bundle_dir, ec);
  if (t.created_) {
    // The folders above it that do not exist either, deepest first: a failed
    // first export removes them too (remove_if_unused), as it found them.
    fs::path above = fs::path(bundle_dir).lexically_normal();
    if (above.filename().empty()) above = above.parent_path();
    for (above = above.parent_path(); !above.empty() && !fs::exists(above, ec); above = above.parent_path()) {
      t.created_parents_.push_back(above.string());
      if (above == above.parent_path()) break;
    }
  }
  if (create) {
    PTB_TRY(t.dir_, BundleDir::open_or_create(bundle_dir));
  } else {
    PTB_TRY(t.dir_, BundleDir::open(bundle_dir));
  }
  const std::string lock_path = t.dir_.display(kLockFileName);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  // Each attempt (create, lock, check the name, register with the signal
  // handler) holds signals back, so a SIGTERM can never leave a lock file the
  // handler does not know (1 of 1,000 did); the sleeps between attempts do
  // not, so a waiting writer still stops at once.
  int fd = -1;
  for (;;) {
    {
      DeferInterrupts defer;
      if (fd < 0) {
        fd = ::openat(t.dir_.fd(), kLockFileName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd < 0) {
          if (errno == ELOOP) return invalid(lock_path + ": is a symbolic link; a bundle holds only regular files and folders");
          return io_error(lock_path + ": cannot open the bundle's lock file: " + errno_text());
        }
        struct stat opened {};
        if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
          ::close(fd);
          return invalid(lock_path + ": is not a regular file; expected the bundle's lock file");
        }
      }
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        // A writer that created the folder and failed removes the lock file:
        // the lock is only ours if the name still leads to the file we locked.
        struct stat held {}, named {};
        if (::fstat(fd, &held) == 0 && ::fstatat(t.dir_.fd(), kLockFileName, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            named.st_ino == held.st_ino && named.st_dev == held.st_dev) {
          t.lock_fd_ = fd;
          t.lock_cleanup_slot_ = register_temp_at(t.dir_.fd(), kLockFileName);
          break;
        }
        ::close(std::exchange(fd, -1));
        continue;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) {
        ::close(fd);
        return io_error(lock_path + ": cannot lock: " + errno_text());
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string holders = lock_holders(fd);
      ::close(fd);
      return io_error(t.dir_.path() + ": another process is changing this bundle (it holds " + lock_path +
                      (holders.empty() ? "" : ", " + holders) + "); waited " + std::to_string(wait.count()) +
                      " s (PTBUNDLE_LOCK_WAIT); try again when it has finished");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // Then the folder itself, which readers hold shared: from here to the end
  // of the transaction no reader sees the bundle.
  PTB_TRY(t.folder_lock_fd_, lock_folder(t.dir_, LOCK_EX, deadline, wait));

  PTB_TRY(auto kind, t.dir_.kind(kManifestFileName));
  if (kind != BundleDir::Kind::Missing) {
    PTB_TRY(t.manifest_, read_manifest(t.dir_));
  }
  // Holding the lock, no other writer is running: whatever it left is ours to remove.
  BundleLeftovers left = find_leftovers(t.dir_, t.manifest_ ? &*t.manifest_ : nullptr);
  for (const auto& path : left.temporary) PTB_CHECK(t.dir_.remove_file(path));
  for (const auto& path : left.pending) PTB_CHECK(t.dir_.remove_file(path));
  // A new part's files, placed before a commit that never came, are named
  // only by the journal; they (or a file a forged journal names, which a
  // hand could remove as well) go too, so the part can be exported again.
  for (const auto& path : left.unexplained) PTB_CHECK(t.dir_.remove_file(path));
  if (left.journal) PTB_CHECK(t.dir_.remove_file(kJournalFileName));
  return t;
}

BundleTransaction::BundleTransaction(BundleTransaction&& other) noexcept { *this = std::move(other); }

BundleTransaction& BundleTransaction::operator=(BundleTransaction&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    dir_ = std::move(other.dir_);
    unregister_temp_path(std::exchange(lock_cleanup_slot_, -1));
    lock_fd_ = std::exchange(other.lock_fd_, -1);
    if (folder_lock_fd_ >= 0) ::close(folder_lock_fd_);
    folder_lock_fd_ = std::exchange(other.folder_lock_fd_, -1);
    lock_cleanup_slot_ = std::exchange(other.lock_cleanup_slot_, -1);
    created_ = other.created_;
    created_parents_ = std::move(other.created_parents_);
    manifest_ = std::move(other.manifest_);
  }
  return *this;
}

BundleTransaction::~BundleTransaction() {
  unregister_temp_path(std::exchange(lock_cleanup_slot_, -1));
  // Readers may start once the lock file is gone too (the order keeps a
  // reader from seeing it as a killed writer's leftover).
  struct ReleaseFolder {
    int fd;
    ~ReleaseFolder() {
      if (fd >= 0) ::close(fd);
    }
  } release{std::exchange(folder_lock_fd_, -1)};
  if (lock_fd_ < 0) return;
  // The lock file goes with the lock, so a bundle holds no trace of it; a
  // writer waiting on the removed file finds the name gone and starts over.
  ::unlinkat(dir_.fd(), kLockFileName, 0);
  ::close(lock_fd_);  // releases the flock
}

void BundleTransaction::remove_if_unused() {
  if (!created_ || lock_fd_ < 0) return;
  auto names = dir_.list("");
  if (!names.ok()) return;
  for (const auto& name : *names) {
    if (name != kLockFileName && name != kTestcaseFolder) return;
  }
  unregister_temp_path(std::exchange(lock_cleanup_slot_, -1));
  ::unlinkat(dir_.fd(), kTestcaseFolder, AT_REMOVEDIR);  // only when empty
  ::unlinkat(dir_.fd(), kLockFileName, 0);
  ::rmdir(dir_.path().c_str());  // fails while a waiting writer has put its own lock file there
  // Then the folders made above it, each only while empty.
  for (const std::string& parent : created_parents_) {
    if (::rmdir(parent.c_str()) != 0) break;
  }
  ::close(std::exchange(lock_fd_, -1));
}

Status BundleTransaction::commit(const std::vector<Placement>& outputs, const Manifest& manifest,
                                 const std::vector<std::string>& superseded, AtomicOutput* manifest_file) {
  const auto listed = listed_paths(&manifest);
  std::vector<std::string> removed;
  for (const auto& path : superseded)
    if (!listed.count(path)) removed.push_back(path);

  // An interruption waits for the commit: the bundle then is the new one,
  // with no journal, and the signal is acted on when this returns.
  DeferInterrupts defer;
  test_kill_point("journal");
  // Appended piece by piece: GCC 12 -O2 reports a false -Wstringop-overflow
  // for string + "\n" here.
  std::string journal = kJournalHeader;
  journal += '\n';
  for (const auto& placement : outputs) {
    journal += placement.path;
    journal += '\n';
  }
  for (const auto& path : removed) {
    journal += path;
    journal += '\n';
  }
  {
    PTB_TRY(auto out, AtomicOutput::create_in(dir_, kJournalFileName));
    PTB_CHECK(out.write(Bytes(reinterpret_cast<const uint8_t*>(journal.data()), journal.size())));
    PTB_CHECK(out.commit());
  }
  // Until bundle.json is written, a failure leaves the old bundle: what was
  // placed (names the old manifest does not use) goes, then the journal.
  size_t placed = 0;
  auto roll_back = [&](Error error) -> Status {
    for (size_t i = 0; i < placed; ++i) (void)dir_.remove_file(outputs[i].path);
    (void)dir_.remove_file(kJournalFileName);
    return error;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    test_kill_point("rename-" + std::to_string(i + 1));
    if (auto status = outputs[i].output->commit(); !status.ok()) return roll_back(status.error());
    ++placed;
  }
  test_kill_point("manifest");
  if (auto status = manifest_file ? manifest_file->commit() : write_manifest(dir_, manifest); !status.ok())
    return roll_back(status.error());
  defer.committed();  // the new bundle is in place: a signal held back no longer fails the command
  manifest_ = manifest;
  test_kill_point("cleanup");
  for (const auto& path : removed) PTB_CHECK(dir_.remove_file(path));
  return dir_.remove_file(kJournalFileName);
}

namespace {

// mkdtemp's suffix: six of [A-Za-z0-9].
bool is_staging_name(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + 6 || !name.starts_with(prefix)) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) return false;
  }
  return true;
}

// Whether the folder open at `fd` holds merge's marker, exactly as written.
bool holds_staging_marker(int fd) {
  int marker = ::openat(fd, kStagingMarkerName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (marker < 0) return false;
  struct stat st {};
  const std::string expected = kStagingMarkerText;
  bool ok = ::fstat(marker, &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) == expected.size();
  if (ok) {
    std::string text(expected.size(), '\0');
    ok = ::pread(marker, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) && text == expected;
  }
  ::close(marker);
  return ok;
}

// Whether the folder open at `fd` holds nothing: a merge killed between
// mkdir and writing its marker leaves such a folder, and removing an empty
// folder loses nothing whoever made it.
bool is_empty_folder(int fd) {
  int copy = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return false;
  DIR* folder = ::fdopendir(copy);
  if (!folder) {
    ::close(copy);
    return false;
  }
  bool empty = true;
  while (const dirent* entry = ::readdir(folder)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(folder);
  return empty;
}

// Opens `path` as a stale staging folder: named as mkdtemp names it, a real
// folder owned by this user, holding the marker, and locked (exclusively,
// now) by no other process. Returns the descriptor holding that lock, or -1.
int open_stale_staging(const fs::path& path, const std::string& prefix) {
  if (!is_staging_name(path.filename().string(), prefix)) return -1;
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      !(holds_staging_marker(fd) || is_empty_folder(fd)) || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

fs::path output_path(const std::string& output_dir) {
  fs::path output = fs::path(output_dir).lexically_normal();
  if (output.filename().empty()) output = output.parent_path();
  return output;
}

}  // namespace

Status mark_staging(int folder_fd, const std::string& folder) {
  const std::string path = folder + "/" + kStagingMarkerName;
  int fd = ::openat(folder_fd, kStagingMarkerName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path + ": cannot create merge's staging marker: " + errno_text());
  const std::string text = kStagingMarkerText;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  std::string why = ok ? std::string() : errno_text();
  ::close(fd);
  if (!ok) return io_error(path + ": cannot write merge's staging marker: " + why);
  return {};
}

Status unmark_staging(int folder_fd, const std::string& folder) {
  if (::unlinkat(folder_fd, kStagingMarkerName, 0) != 0 && errno != ENOENT) {
    return io_error(folder + "/" + kStagingMarkerName + ": cannot remove merge's staging marker: " + errno_text());
  }
  return {};
}

std::vector<std::string> find_stale_staging(const std::string& output_dir) {
  std::vector<std::string> out;
  fs::path output = output_path(output_dir);
  fs::path parent = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  const std::string prefix = "." + output.filename().string() + ".merge-";
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    int fd = open_stale_staging(it->path(), prefix);
    if (fd < 0) continue;
    out.push_back(it->path().string());
    ::close(fd);
  }
  return out;
}

void remove_stale_staging(const std::string& output_dir) {
  const std::string prefix = "." + output_path(output_dir).filename().string() + ".merge-";
  for (const auto& path : find_stale_staging(output_dir)) {
    // Checked again, holding the folder's lock, right before removing it.
    int fd = open_stale_staging(path, prefix);
    if (fd < 0) continue;
    std::error_code ec;
    fs::remove_all(path, ec);  // never follows a symlink inside
    ::close(fd);
  }
}

}  // namespace ptb
