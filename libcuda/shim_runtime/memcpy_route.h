// The library's cudaMemcpy. A library built with link_libtorch=False imports
// cudaMemcpy unversioned and finds it in this runtime, which exports the CUDA
// runtime it links statically, so the runtime can serve the call itself: no
// GOT slot is rewritten, as the LibTorch runner must (runner/copy_redirect.h).
// The static runtime's own cudaMemcpy is renamed ptb_cudart_cudaMemcpy at
// build time (objcopy, CMakeLists.txt) so that this one is the only
// cudaMemcpy in the module.
//
// update_constants_from_blob copies each constant out of the weights blob
// with a synchronous cudaMemcpy from pageable memory (6.6 GB/s on the H200
// machine). While a BlobCopyRoute lives, host-to-device copies of at least
// its minimum size whose source lies in its blob go to its copier (a copy
// out of the blob already uploaded, or a Stager), which the library sees as
// its cudaMemcpy having finished.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

extern "C" cudaError_t ptb_cudart_cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);

namespace ptb::shim {

inline constexpr uint64_t kRouteAtLeast = 1ull << 20;

class BlobCopyRoute {
 public:
  // Returns an error text, or "" when the copy was made.
  using Copier = std::function<std::string(void* device, const uint8_t* host, uint64_t bytes)>;
  // One route at a time in the process; a second waits for the first.
  BlobCopyRoute(const uint8_t* blob, uint64_t size, uint64_t min_bytes, Copier copier);
  ~BlobCopyRoute();
  BlobCopyRoute(const BlobCopyRoute&) = delete;
  BlobCopyRoute& operator=(const BlobCopyRoute&) = delete;

  uint64_t routed_bytes() const;
  std::string failure() const;  // the first copier error, if any
};

}  // namespace ptb::shim
