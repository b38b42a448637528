// Temporary files removed when SIGINT, SIGTERM or SIGHUP stops the process.
// The handler may run at any instruction of any thread, so it touches only a
// fixed table (no allocation, no locks) and calls only async-signal-safe
// functions (open, getdents64, unlinkat, rmdir, close, signal, raise).
// Inside a DeferInterrupts section the handler only records the signal; the
// section's end acts on it (interrupt.h).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "ptbundle/base/file.h"
#include "ptbundle/base/interrupt.h"

namespace ptb {
namespace {

constexpr int kSlots = 256;
constexpr size_t kPathBytes = PATH_MAX;

enum : int { kFree = 0, kFilling = 1, kReady = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  bool folder = false;
  int dir_fd = -1;  // >= 0: `path` is a name inside this folder
  char path[kPathBytes];
};

Slot slots[kSlots];
std::atomic<bool> installed{false};
std::atomic<int> defer_depth{0};
std::atomic<int> deferred_signal{0};

size_t text_length(const char* text) {
  size_t n = 0;
  while (text[n]) ++n;
  return n;
}

// Removes what is in `path` (folders `depth` levels deep), then the folder.
// Entries are removed while the folder is read, so it is read again until a
// pass removes nothing.
void remove_tree(const char* path, int depth) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buffer[4096];
  for (int pass = 0; pass < 64; ++pass) {
    bool removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      long n = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        struct Entry {
          uint64_t inode;
          int64_t offset;
          unsigned short length;
          unsigned char type;
          char name[1];
        };
        const auto* entry = reinterpret_cast<const Entry*>(buffer + at);
        at += entry->length;
        const char* name = entry->name;
        if ((name[0] == '.' && name[1] == 0) || (name[0] == '.' && name[1] == '.' && name[2] == 0)) continue;
        if (entry->type == DT_DIR) {
          if (depth <= 0) continue;
          char child[kPathBytes];
          size_t a = text_length(path), b = text_length(name);
          if (a + 1 + b + 1 > sizeof child) continue;
          std::memcpy(child, path, a);
          child[a] = '/';
          std::memcpy(child + a + 1, name, b + 1);
          remove_tree(child, depth - 1);
          removed = true;
        } else if (::unlinkat(fd, name, 0) == 0) {
          removed = true;
        }
      }
    }
    if (!removed) break;
  }
  ::close(fd);
  ::rmdir(path);
}

void remove_registered() {
  for (Slot& slot : slots) {
    if (slot.state.load(std::memory_order_acquire) != kReady) continue;
    if (slot.dir_fd >= 0) ::unlinkat(slot.dir_fd, slot.path, 0);
    else if (slot.folder) remove_tree(slot.path, 2);
    else ::unlink(slot.path);
  }
}

void on_signal(int signal_number) {
  if (defer_depth.load(std::memory_order_acquire) > 0) {
    // A commit is renaming files into place: it finishes first.
    deferred_signal.store(signal_number, std::memory_order_release);
    return;
  }
  int saved = errno;
  remove_registered();
  errno = saved;
  // The default action again; the signal is delivered again when the handler
  // returns, so the exit status says what stopped us.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install() {
  bool expected = false;
  if (!installed.compare_exchange_strong(expected, true)) return;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(signal_number, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep SIG_IGN (nohup)
    struct sigaction action {};
    action.sa_handler = on_signal;
    ::sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace

int register_temp_path(const std::string& path, bool folder) {
  install();
  std::string absolute = path;
  if (absolute.empty() || absolute.front() != '/') {
    char cwd[kPathBytes];
    if (!::getcwd(cwd, sizeof cwd)) return -1;
    absolute = std::string(cwd) + "/" + path;
  }
  if (absolute.size() + 1 > kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, absolute.c_str(), absolute.size() + 1);
    slots[i].folder = folder;
    slots[i].dir_fd = -1;
    slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

int register_temp_at(int dir_fd, const std::string& name) {
  install();
  if (dir_fd < 0 || name.empty() || name.size() > NAME_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, name.c_str(), name.size() + 1);
    slots[i].folder = false;
    slots[i].dir_fd = dir_fd;
    slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

DeferInterrupts::DeferInterrupts() {
  install();
  defer_depth.fetch_add(1, std::memory_order_acq_rel);
}

DeferInterrupts::~DeferInterrupts() {
  if (defer_depth.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  int signal_number = deferred_signal.exchange(0, std::memory_order_acq_rel);
  if (signal_number != 0) on_signal(signal_number);
}

void unregister_temp_path(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  slots[slot].state.store(kFree, std::memory_order_release);
}

void test_kill_point(const std::string& step) {
  const char* wanted = std::getenv("PTB_TEST_KILL_AT");
  if (!wanted || step != wanted) return;
  // PTB_TEST_KILL_SIGNAL=INT or TERM: a user's Ctrl-C or a service stop
  // instead; STOP holds the process here until the test, having changed
  // files at this very moment, sends SIGCONT.
  const char* signal_name = std::getenv("PTB_TEST_KILL_SIGNAL");
  int signal_number = SIGKILL;
  if (signal_name && std::strcmp(signal_name, "INT") == 0) signal_number = SIGINT;
  if (signal_name && std::strcmp(signal_name, "TERM") == 0) signal_number = SIGTERM;
  if (signal_name && std::strcmp(signal_name, "STOP") == 0) signal_number = SIGSTOP;
  ::raise(signal_number);
}

}  // namespace ptb
