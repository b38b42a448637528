// The library's cudaMemcpy. A library built with link_libtorch=False imports
// cudaMemcpy unversioned and finds it in this runtime, which exports the CUDA
// runtime it links statically, so the runtime can serve the call itself: no
// GOT slot is rewritten, as the LibTorch runtime must (libtorch/
// copy_redirect.h). The static runtime's own cudaMemcpy is renamed
// ptb_cudart_cudaMemcpy at build time (objcopy, cudart_exports.cmake) so
// that this one is the only cudaMemcpy in the module.
//
// While a MemcpyRoute lives, host-to-device copies of at least its minimum
// size whose source lies in its blob go to its copier (runner/device_ops.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runner/device_ops.h"

extern "C" cudaError_t ptb_cudart_cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);

namespace ptb::builtin {

class MemcpyRoute final : public detail::BlobCopyRoute {
 public:
  // One route at a time in the process; a second waits for the first.
  MemcpyRoute(const uint8_t* blob, uint64_t size, uint64_t min_bytes, Copier copier);
  ~MemcpyRoute() override;
  MemcpyRoute(const MemcpyRoute&) = delete;
  MemcpyRoute& operator=(const MemcpyRoute&) = delete;

  uint64_t routed_bytes() const override;
  std::string failure() const override;
};

}  // namespace ptb::builtin
