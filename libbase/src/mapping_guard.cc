// Mapped inputs that shrink while mapped (another process truncates or
// rewrites the file in place, as `cp new old` does) must not crash us. A read
// of a mapped page past the file's new end raises SIGBUS; inputs are mapped
// so that a 4 GiB data file costs nothing until touched, and their bytes are
// read in too many places (FlatBuffers accessors, comparisons, copies) to
// wrap each one in sigsetjmp or to read everything with pread instead.
//
// So every mapping is registered here, and a SIGBUS inside one replaces the
// rest of that mapping with zero pages (MAP_FIXED anonymous) and marks it:
// the faulting instruction then reads zeros and the process carries on.
// Nothing computed from those zeros is trusted: check_unchanged() and
// changed_mapped_file() report the file as changed while being read,
// AtomicOutput::commit refuses to commit anything once any input changed, and
// the CLI turns its report into that error. A SIGBUS outside every
// registered mapping goes to the previous handler (by default: the crash).
//
// The handler reads a fixed table (no allocation, no locks) and calls only
// mmap, which on Linux is a plain system call.
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptbundle/base/mapping_guard.h"
#include "ptbundle/base/test_seams.h"

namespace ptb {
namespace {

constexpr int kRegions = 1 << 16;

struct Region {
  std::atomic<uintptr_t> start{0};  // 0: free
  std::atomic<uint64_t> length{0};
  std::atomic<int> faulted{0};
};

Region regions[kRegions];
std::atomic<int> high_water{0};  // regions [0, high_water) may be in use
std::atomic<int> faults{0};
uintptr_t page_size = 4096;
struct sigaction previous {};

// Never touched by the handler: which region holds which mapping, their
// names, and the names of regions that faulted and are gone.
struct Book {
  std::mutex mutex;
  std::unordered_map<uintptr_t, int> slot_of;
  std::vector<std::string> names = std::vector<std::string>(kRegions);
  std::vector<int> free_slots;
  std::vector<std::string> changed_and_gone;
};
Book& book() {
  static Book* b = new Book;  // never destroyed: mappings may outlive static destruction
  return *b;
}

void on_sigbus(int signal_number, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  const int n = high_water.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    Region& region = regions[i];
    const uintptr_t start = region.start.load(std::memory_order_acquire);
    if (start == 0) continue;
    const uint64_t length = region.length.load(std::memory_order_relaxed);
    if (address < start || address - start >= length) continue;
    const uintptr_t page = address & ~(page_size - 1);
    const uintptr_t end = (start + length + page_size - 1) & ~(page_size - 1);
    void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) break;
    region.faulted.store(1, std::memory_order_release);
    faults.fetch_add(1, std::memory_order_release);
    return;
  }
  // Not one of ours: as if we had never been installed.
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal_number);
    return;
  }
  // Returning re-runs the faulting instruction, which faults again under the
  // default action.
  ::signal(SIGBUS, SIG_DFL);
}

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    long size = ::sysconf(_SC_PAGESIZE);
    if (size > 0) page_size = static_cast<uintptr_t>(size);
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    ::sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO;
    ::sigaction(SIGBUS, &action, &previous);
  });
}

}  // namespace

void guard_mapping(const void* data, uint64_t size, const std::string& path) {
  if (!data || size == 0) return;
  install();
  Book& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  int slot = -1;
  if (!b.free_slots.empty()) {
    slot = b.free_slots.back();
    b.free_slots.pop_back();
  } else if (high_water.load(std::memory_order_relaxed) < kRegions) {
    slot = high_water.load(std::memory_order_relaxed);
  } else {
    return;  // table full: this mapping is read unguarded, as before
  }
  const auto start = reinterpret_cast<uintptr_t>(data);
  b.names[slot] = path;
  b.slot_of[start] = slot;
  regions[slot].faulted.store(0, std::memory_order_relaxed);
  regions[slot].length.store(size, std::memory_order_relaxed);
  regions[slot].start.store(start, std::memory_order_release);
  if (slot >= high_water.load(std::memory_order_relaxed)) high_water.store(slot + 1, std::memory_order_release);
}

void unguard_mapping(const void* data) {
  if (!data) return;
  Book& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  auto it = b.slot_of.find(reinterpret_cast<uintptr_t>(data));
  if (it == b.slot_of.end()) return;
  const int slot = it->second;
  b.slot_of.erase(it);
  regions[slot].start.store(0, std::memory_order_release);
  if (regions[slot].faulted.load(std::memory_order_acquire)) b.changed_and_gone.push_back(b.names[slot]);
  b.names[slot].clear();
  b.free_slots.push_back(slot);
}

Status check_unchanged(const MappedFile& file) {
  if (file.size() == 0) return {};
  {
    Book& b = book();
    std::lock_guard<std::mutex> lock(b.mutex);
    auto it = b.slot_of.find(reinterpret_cast<uintptr_t>(file.bytes().data()));
    if (it != b.slot_of.end() && regions[it->second].faulted.load(std::memory_order_acquire))
      return changed_while_read(file.path());
  }
  struct stat st {};
  if (file.fd() >= 0 && ::fstat(file.fd(), &st) == 0 && static_cast<uint64_t>(st.st_size) != file.size()) {
    return io_error(file.path() + ": changed while being read (" + std::to_string(file.size()) +
                    " bytes when opened, " + std::to_string(st.st_size) +
                    " now: another process is writing it); expected it to stay as it was until ptbundle has "
                    "finished with it");
  }
  return {};
}

std::optional<std::string> changed_mapped_file() {
  if (faults.load(std::memory_order_acquire) == 0) return std::nullopt;
  Book& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (!b.changed_and_gone.empty()) return b.changed_and_gone.front();
  const int n = high_water.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (regions[i].start.load(std::memory_order_acquire) != 0 && regions[i].faulted.load(std::memory_order_acquire))
      return b.names[i];
  }
  return std::nullopt;
}

void forget_changed_mapped_files() {
  Book& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.changed_and_gone.clear();
  const int n = high_water.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) regions[i].faulted.store(0, std::memory_order_release);
  faults.store(0, std::memory_order_release);
}

Error changed_while_read(const std::string& path) {
  return io_error(path + ": changed while being read (it shrank: another process truncated or rewrote it); "
                  "expected it to stay as it was until ptbundle has finished with it");
}

namespace {
std::atomic<TestShrinkHook> shrink_hook{nullptr};
}  // namespace

void set_test_shrink_hook(TestShrinkHook hook) { shrink_hook.store(hook, std::memory_order_release); }

void test_shrink_point(const std::string& path) {
  if (TestShrinkHook hook = shrink_hook.load(std::memory_order_acquire)) hook(path);
}

}  // namespace ptb
