// What a runtime gives the container driver (container_driver.h): the
// tensors behind AtenTensorHandles (ptbundle's own under the built-in
// runtime, at::Tensor under LibTorch) and its way of serving the library's
// cudaMemcpy while the weights blob loads. Everything else a call needs
// (streams, events, graphs, copies of bytes) is the CUDA runtime's, which
// each module links and the driver calls directly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "runner/aoti_abi.h"
#include "runner/loaded_library.h"

namespace ptb::detail {

// A strided view: sizes, strides and offset in elements, as in ATen.
struct TensorGeometry {
  int32_t dtype = 6;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
};

enum class Memory { Host = 0, Gpu = 1 };  // c10's device types: 0 CPU, 1 CUDA

// While alive, host-to-device copies of at least its minimum size whose
// source lies in the weights blob go to its copier, which the library sees
// as its cudaMemcpy having finished.
class BlobCopyRoute {
 public:
  // Returns an error text, or "" when the copy was made.
  using Copier = std::function<std::string(void* device, const uint8_t* host, uint64_t bytes)>;
  virtual ~BlobCopyRoute() = default;
  virtual uint64_t routed_bytes() const = 0;
  virtual std::string failure() const = 0;  // the first copier error, if any
};

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // Before the library is opened: what the runtime must have ready for it
  // (LibTorch made global; cuBLAS or cuDNN opened for the shims it imports).
  // Fails naming what is missing. `libraries` says what was opened.
  virtual Status prepare(const LoadRequest& request, std::string& libraries) = 0;

  // A handle viewing memory the runtime does not own (weights, a caller's
  // buffers, host memory to copy into).
  virtual Result<AtenTensorHandle> view(void* data, const TensorGeometry& geometry, Memory memory, int device) = 0;
  // A new contiguous GPU tensor, allocated in order on `stream`.
  virtual Result<AtenTensorHandle> empty(const std::vector<int64_t>& sizes, int32_t dtype, int device,
                                         cudaStream_t stream) = 0;
  // Another handle to the same tensor: the container steals (deletes) the
  // handles it is given.
  virtual Result<AtenTensorHandle> alias(AtenTensorHandle tensor) = 0;
  virtual void release(AtenTensorHandle tensor) = 0;
  // Drops the handle without giving its memory back: memory a CUDA graph
  // reserved at capture and never allocated, because its first launch failed.
  virtual void forget(AtenTensorHandle tensor) = 0;

  virtual TensorGeometry geometry(AtenTensorHandle tensor) = 0;
  virtual void* data(AtenTensorHandle tensor) = 0;
  virtual Memory memory(AtenTensorHandle tensor) = 0;

  // `src`'s values into `dst` (same dtype and sizes, any strides), in order
  // on `stream`; a copy into host memory is finished when this returns.
  virtual Status copy(AtenTensorHandle dst, AtenTensorHandle src, int device, cudaStream_t stream) = 0;

  // Routes the library's blob copies while the result lives; nullptr and
  // `why_not` when this runtime cannot for this library.
  virtual std::unique_ptr<BlobCopyRoute> route_blob_copies(const LoadedLibrary& library, Bytes library_elf,
                                                           Bytes blob, uint64_t min_bytes,
                                                           BlobCopyRoute::Copier copier, std::string& why_not) = 0;

  // The runtime's copy of cudaMemcpy that no route intercepts.
  virtual cudaError_t plain_memcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) = 0;

  // Whether calls may be captured into a CUDA graph; "" if so, else why not.
  virtual std::string graphs_unsupported() const = 0;
  // Called around each call of the library, on the stream it runs on: the
  // runtime makes that stream current for its own allocations.
  virtual void begin_call(int device, cudaStream_t stream) = 0;
  virtual void end_call(int device) = 0;
};

}  // namespace ptb::detail
