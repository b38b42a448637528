// The built-in runtime module (libptbundle_builtin_runtime.so): the container
// driver (runner/container_driver.h) over ptbundle's own tensors, with the
// CUDA runtime linked statically and cuBLAS and cuDNN opened at first use.
#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>

#include "engines/cuda_libraries.h"
#include "engines/memcpy_route.h"
#include "engines/random_state.h"
#include "runner/container_driver.h"
#include "runner/cuda_error.h"
#include "runner/runtime_module.h"
#include "engines/tensor.h"
#include "engines/tuned.h"
#include "shims/shim_support.h"

namespace ptb::builtin {
namespace {

using detail::Memory;
using detail::TensorGeometry;

// The reason a shim printed, for an error of the driver's.
Error shim_error(const char* what) {
  return invalid(std::string(what) + " (the runtime printed its reason on stderr)");
}

class BuiltinOps final : public detail::DeviceOps {
 public:
  Status prepare(const LoadRequest& request, std::string& libraries) override {
    PTB_CHECK(open_libraries_for(request.imports, request.label, libraries));
    seed_random(request.seed);
    return {};
  }

  Result<AtenTensorHandle> view(void* data, const TensorGeometry& geometry, Memory memory, int device) override {
    const std::vector<int64_t> strides =
        geometry.strides.empty() ? contiguous_strides(geometry.sizes) : geometry.strides;
    AtenTensorHandle handle = nullptr;
    if (aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(geometry.sizes.size()), geometry.sizes.data(),
                                           strides.data(), geometry.storage_offset, geometry.dtype,
                                           static_cast<int32_t>(memory), device, &handle) != kShimSuccess)
      return shim_error("cannot view the memory as a tensor");
    return handle;
  }

  Result<AtenTensorHandle> empty(const std::vector<int64_t>& sizes, int32_t dtype, int device,
                                 cudaStream_t stream) override {
    const std::vector<int64_t> strides = contiguous_strides(sizes);
    void* previous = current_stream(device);
    set_current_stream(device, stream);
    AtenTensorHandle handle = nullptr;
    const AOTITorchError code = aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(),
                                                         strides.data(), dtype, kDeviceCuda, device, &handle);
    set_current_stream(device, previous);
    if (code != kShimSuccess) return shim_error("cannot allocate GPU memory");
    return handle;
  }

  Result<AtenTensorHandle> alias(AtenTensorHandle tensor) override {
    AtenTensorHandle handle = nullptr;
    if (aoti_torch_new_tensor_handle(tensor, &handle) != kShimSuccess) return invalid("out of host memory");
    return handle;
  }

  void release(AtenTensorHandle tensor) override { aoti_torch_delete_tensor_object(tensor); }

  void forget(AtenTensorHandle tensor) override {
    Tensor* owned = tensor_of(tensor);
    if (owned->storage && owned->storage.use_count() == 1) owned->storage->data = nullptr;
    delete owned;
  }

  TensorGeometry geometry(AtenTensorHandle tensor) override {
    const Tensor& t = *tensor_of(tensor);
    return {t.dtype, t.sizes, t.strides, t.storage_offset};
  }

  void* data(AtenTensorHandle tensor) override { return tensor_of(tensor)->data(); }

  Memory memory(AtenTensorHandle tensor) override {
    return tensor_of(tensor)->storage->device_type == kDeviceCuda ? Memory::Gpu : Memory::Host;
  }

  Status copy(AtenTensorHandle dst, AtenTensorHandle src, int device, cudaStream_t stream) override {
    void* previous = current_stream(device);
    set_current_stream(device, stream);
    Status copied = copy_elements(*tensor_of(dst), *tensor_of(src));
    set_current_stream(device, previous);
    return copied;
  }

  std::unique_ptr<detail::BlobCopyRoute> route_blob_copies(const detail::LoadedLibrary&, Bytes, Bytes blob,
                                                           uint64_t min_bytes, detail::BlobCopyRoute::Copier copier,
                                                           std::string&) override {
    return std::make_unique<MemcpyRoute>(blob.data(), blob.size(), min_bytes, std::move(copier));
  }

  cudaError_t plain_memcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) override {
    return ptb_cudart_cudaMemcpy(dst, src, bytes, kind);
  }

  std::string graphs_unsupported() const override { return ""; }

  void begin_call(int device, cudaStream_t stream) override { set_current_stream(device, stream); }
  void end_call(int device) override { set_current_stream(device, nullptr); }
};

Result<std::unique_ptr<detail::ModelBackend>> load(const LoadRequest& request) {
  return detail::load_container(request, std::make_unique<BuiltinOps>());
}

std::string describe() {
  int version = 0;
  cudaRuntimeGetVersion(&version);
  return "built-in (CUDA runtime " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + ")";
}

const detail::RuntimeModule module_table = [] {
  detail::RuntimeModule table;
  table.describe = describe;
  table.load = load;
  table.pinned_upload_gb_per_second = detail::measure_pinned_upload;
  table.use_tuned = use_tuned;
  table.choices_made = choices_made;
  return table;
}();

}  // namespace
}  // namespace ptb::builtin

extern "C" __attribute__((visibility("default"))) const ptb::detail::RuntimeModule* ptbundle_runtime_module() {
  return &ptb::builtin::module_table;
}
