#include "copy_redirect.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "ptbundle/kernels/elf_imports.h"

namespace ptb::libtorch {
namespace {

using MemcpyFunction = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind);

// One redirect at a time in a process: the slots point at one function.
struct Redirected {
  std::mutex in_use;
  std::atomic<MemcpyFunction> original{nullptr};
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  uint64_t min_bytes = 0;
  detail::BlobCopyRoute::Copier copier;
  uint64_t routed = 0;
  std::string failure;
};

Redirected& redirected() {
  static Redirected state;
  return state;
}

cudaError_t routed_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  Redirected& state = redirected();
  const auto* from = static_cast<const uint8_t*>(src);
  const bool from_blob = from >= state.begin && from < state.end && count <= static_cast<size_t>(state.end - from);
  if (kind != cudaMemcpyHostToDevice || count < state.min_bytes || !from_blob || !state.copier ||
      !state.failure.empty())
    return state.original.load()(dst, src, count, kind);
  std::string why = state.copier(dst, from, count);
  if (!why.empty()) {
    state.failure = why;
    return cudaErrorUnknown;
  }
  state.routed += count;
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

std::unique_ptr<CopyRedirect> CopyRedirect::install(const detail::LoadedLibrary& library, Bytes library_elf,
                                                    Bytes blob, uint64_t min_bytes, Copier copier) {
  std::unique_ptr<CopyRedirect> made(new CopyRedirect);
  CopyRedirect& redirect = *made;
  auto found = find_import_slots(library_elf, "cudaMemcpy", "the library");
  if (!found.ok()) {
    redirect.why_not_ = found.error().message;
    return made;
  }
  const std::vector<ImportSlot>& slots = *found;
  if (slots.empty()) {
    redirect.why_not_ = "the library does not import cudaMemcpy";
    return made;
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
      return made;
    }
    bound = value;
  }

  Redirected& state = redirected();
  state.in_use.lock();
  state.original = reinterpret_cast<MemcpyFunction>(bound);
  state.begin = blob.data();
  state.end = blob.data() + blob.size();
  state.min_bytes = min_bytes;
  state.copier = std::move(copier);
  state.routed = 0;
  state.failure.clear();
  redirect.original_ = bound;
  for (const ImportSlot& slot : slots) {
    auto** address = reinterpret_cast<void**>(bias + slot.vaddr);
    if (!write_slot(address, reinterpret_cast<void*>(&routed_memcpy), slot.read_only)) {
      redirect.restore();
      redirect.why_not_ = "the page of the library's cudaMemcpy slot cannot be made writable";
      return made;
    }
    redirect.slots_.push_back({address, slot.read_only});
  }
  return made;
}

void CopyRedirect::restore() {
  if (!original_) return;
  for (const Slot& slot : slots_) write_slot(slot.address, original_, slot.read_only);
  slots_.clear();
  Redirected& state = redirected();
  state.copier = nullptr;
  state.begin = state.end = nullptr;
  original_ = nullptr;
  state.in_use.unlock();
}

CopyRedirect::~CopyRedirect() { restore(); }

uint64_t CopyRedirect::routed_bytes() const { return redirected().routed; }
std::string CopyRedirect::failure() const { return redirected().failure; }

}  // namespace ptb::libtorch
