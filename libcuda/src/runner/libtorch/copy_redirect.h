// AOTInductor's update_constants_from_blob (PyTorch 2.6 to 2.11) copies each
// constant with a synchronous cudaMemcpy from the blob in pageable memory:
// 6.6 GB/s on the H200 machine, a tenth of what the bus carries from pinned
// memory. The library offers no way to learn its constants' shapes without
// that copy, so while it loads the blob, its cudaMemcpy import (a GOT slot)
// is pointed at a function that sends large host-to-device copies out of the
// blob through a Stager, and every other call to the real cudaMemcpy. The
// slots are put back before install()'s result is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "runner/loaded_library.h"

namespace ptb::detail {

class CopyRedirect {
 public:
  // An inactive redirect, with why_not() saying why, when the library does
  // not import cudaMemcpy through slots that hold its address.
  static CopyRedirect install(const LoadedLibrary& library, Bytes library_elf, Bytes blob, Stager& stager,
                                      const std::string& origin);
  CopyRedirect(CopyRedirect&& other) noexcept;
  CopyRedirect& operator=(CopyRedirect&&) = delete;
  CopyRedirect(const CopyRedirect&) = delete;
  ~CopyRedirect();

  bool active() const { return !slots_.empty(); }
  const std::string& why_not() const { return why_not_; }
  uint64_t staged_bytes() const;
  // What failed in a staged copy (the library then reports a CUDA error).
  std::string failure() const;

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

}  // namespace ptb::detail
