// A shared library opened from bytes in memory, as ExecuTorch's CUDA backend
// opens the library stored in a .pte: written to a private folder, opened
// with dlopen, and the folder removed before open() returns, whether dlopen
// succeeded or not, so no copy of the library is left behind. The same bytes
// opened again share the first dlopen while it lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

class LoadedLibrary {
 public:
  // `digest` identifies the bytes (their SHA-256, which the caller has);
  // `file_name` names the temporary copy ("encoder.so"); `origin` names the
  // bytes in errors ("model.pte: named data 'abc_so_blob'").
  static Result<LoadedLibrary> open(Bytes bytes, const std::string& digest, const std::string& file_name,
                                    const std::string& origin);

  LoadedLibrary() = default;

  // For tests: from now on, act as a machine without a shared
  // libstdc++.so.6 (loaded_library.cc says what changes then).
  static void assume_no_shared_libstdcxx();

  // nullptr when the library does not export `name`.
  void* symbol(const char* name) const;
  // What the loader added to the library's virtual addresses (l_addr).
  uintptr_t load_bias() const;

 private:
  // Shared by every LoadedLibrary of the same bytes (loaded_library.cc says
  // why); dlclose'd with the last.
  std::shared_ptr<void> handle_;
};

}  // namespace ptb::detail
