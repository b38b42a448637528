#include "runner/libtorch/copy_redirect.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "ptbundle/kernels/elf_imports.h"

namespace ptb::detail {
namespace {

using MemcpyFunction = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);

// Copies smaller than this go to the real cudaMemcpy: they are bound by
// latency, not bandwidth.
constexpr size_t kStagedAtLeast = 1u << 20;

// One redirect at a time in a process: the slots point at one function.
struct Redirected {
  std::mutex in_use;
  std::atomic<MemcpyFunction> original{nullptr};
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  Stager* stager = nullptr;
  uint64_t staged = 0;
  std::string failure;
};

Redirected& redirected() {
  static Redirected state;
  return state;
}

cudaError_t staged_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  Redirected& state = redirected();
  const auto* from = static_cast<const uint8_t*>(src);
  const bool from_blob = from >= state.begin && from < state.end && count <= static_cast<size_t>(state.end - from);
  if (kind != cudaMemcpyHostToDevice || count < kStagedAtLeast || !from_blob || !state.stager)
    return state.original.load()(dst, src, count, kind);
  HostToDevice copy{Bytes(from, count), dst};
  Status done = state.stager->copy(std::span<const HostToDevice>(&copy, 1));
  if (!done.ok()) {
    state.failure = done.error().message;
    return cudaErrorUnknown;
  }
  state.staged += count;
  return cudaSuccess;
}

// Writes `value` into a slot, lifting the read-only protection RELRO put on
// its page for the moment of the write.
bool write_slot(void** slot, void* value, bool read_only) {
  const auto page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(slot) & ~(page_size - 1));
  if (read_only && ::mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(slot, value, __ATOMIC_SEQ_CST);
  if (read_only) ::mprotect(page, page_size, PROT_READ);
  return true;
}

}  // namespace

CopyRedirect CopyRedirect::install(const LoadedLibrary& library, Bytes library_elf, Bytes blob, Stager& stager,
                                   const std::string& origin) {
  CopyRedirect redirect;
  auto found = find_import_slots(library_elf, "cudaMemcpy", origin);
  if (!found.ok()) {
    redirect.why_not_ = found.error().message;
    return redirect;
  }
  const std::vector<ImportSlot>& slots = *found;
  if (slots.empty()) {
    redirect.why_not_ = "the library does not import cudaMemcpy";
    return redirect;
  }
  const uintptr_t bias = library.load_bias();
  void* bound = nullptr;
  for (const ImportSlot& slot : slots) {
    auto** address = reinterpret_cast<void**>(bias + slot.vaddr);
    void* value = __atomic_load_n(address, __ATOMIC_SEQ_CST);
    // The slot must hold what cudaMemcpy resolves to here; anything else
    // (an unbound lazy stub, another interposer) is left alone.
    if (!value || (value != ::dlsym(RTLD_DEFAULT, "cudaMemcpy") && value != library.symbol("cudaMemcpy")) ||
        (bound && value != bound)) {
      redirect.why_not_ = "the library's cudaMemcpy slot does not hold cudaMemcpy's address";
      return redirect;
    }
    bound = value;
  }

  Redirected& state = redirected();
  state.in_use.lock();
  state.original = reinterpret_cast<MemcpyFunction>(bound);
  state.begin = blob.data();
  state.end = blob.data() + blob.size();
  state.stager = &stager;
  state.staged = 0;
  state.failure.clear();
  redirect.original_ = bound;
  for (const ImportSlot& slot : slots) {
    auto** address = reinterpret_cast<void**>(bias + slot.vaddr);
    if (!write_slot(address, reinterpret_cast<void*>(&staged_memcpy), slot.read_only)) {
      redirect.restore();
      redirect.why_not_ = "the page of the library's cudaMemcpy slot cannot be made writable";
      return redirect;
    }
    redirect.slots_.push_back({address, slot.read_only});
  }
  return redirect;
}

CopyRedirect::CopyRedirect(CopyRedirect&& other) noexcept
    : slots_(std::move(other.slots_)), original_(other.original_), why_not_(std::move(other.why_not_)) {
  other.slots_.clear();
  other.original_ = nullptr;
}

void CopyRedirect::restore() {
  if (!original_) return;
  for (const Slot& slot : slots_) write_slot(slot.address, original_, slot.read_only);
  slots_.clear();
  Redirected& state = redirected();
  state.stager = nullptr;
  state.begin = state.end = nullptr;
  original_ = nullptr;
  state.in_use.unlock();
}

CopyRedirect::~CopyRedirect() { restore(); }

uint64_t CopyRedirect::staged_bytes() const { return redirected().staged; }
std::string CopyRedirect::failure() const { return redirected().failure; }

}  // namespace ptb::detail
