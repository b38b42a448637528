// AOTInductor's update_constants_from_blob (PyTorch 2.6 to 2.11) copies each
// constant with a synchronous cudaMemcpy from the blob in pageable memory:
// about a tenth of what the bus carries from pinned memory. A library linked to libtorch binds cudaMemcpy to LibTorch's CUDA
// runtime, which this runtime cannot replace (the built-in runtime exports
// its own: libruntime/engines/memcpy_route.h). So while it loads the blob, the
// library's cudaMemcpy import (a GOT slot) is pointed at a function that
// sends the blob's host-to-device copies to the route's copier, and every
// other call to the real cudaMemcpy. The slots are put back when the
// redirect is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "runner/device_ops.h"
#include "runner/loaded_library.h"

namespace ptb::libtorch {

class CopyRedirect final : public detail::BlobCopyRoute {
 public:
  // An inactive redirect, with why_not() saying why, when the library does
  // not import cudaMemcpy through slots that hold its address.
  static std::unique_ptr<CopyRedirect> install(const detail::LoadedLibrary& library, Bytes library_elf, Bytes blob,
                                               uint64_t min_bytes, Copier copier);
  ~CopyRedirect() override;
  CopyRedirect(const CopyRedirect&) = delete;
  CopyRedirect& operator=(const CopyRedirect&) = delete;

  bool active() const { return !slots_.empty(); }
  const std::string& why_not() const { return why_not_; }
  uint64_t routed_bytes() const override;
  std::string failure() const override;

 private:
  CopyRedirect() = default;
  void restore();
  struct Slot {
    void** address;
    bool read_only;
  };
  std::vector<Slot> slots_;
  void* original_ = nullptr;
  std::string why_not_;
};

}  // namespace ptb::libtorch
