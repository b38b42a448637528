// The LibTorch runtime module (libptbundle_libtorch_runtime.so): the
// container driver (runner/container_driver.h) over at::Tensor, for
// libraries linked to libtorch, whose shims are LibTorch's. LibTorch's
// exceptions never leave this file: each becomes an error.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <dlfcn.h>

#include <memory>

#include "ptbundle/cuda/runner_config.h"
#include "runner/container_driver.h"
#include "libtorch_global.h"
#include "runner/runtime_module.h"
#include "copy_redirect.h"

namespace ptb::libtorch {
namespace {

using detail::Memory;
using detail::TensorGeometry;

std::string first_line(const char* text) {
  std::string line(text);
  return line.substr(0, line.find('\n'));
}

// Runs `body`, turning LibTorch's exceptions into errors.
template <class Body>
auto guarded(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return invalid(first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return invalid(first_line(e.what()));
  }
}

// In LibTorch's shims an AtenTensorHandle is an at::Tensor* in disguise
// (torch/csrc/inductor/aoti_torch/utils.h).
AtenTensorHandle handle_of(at::Tensor* tensor) { return reinterpret_cast<AtenTensorHandle>(tensor); }
at::Tensor& tensor_of(AtenTensorHandle handle) { return *reinterpret_cast<at::Tensor*>(handle); }

c10::DeviceIndex index_of(int device) { return static_cast<c10::DeviceIndex>(device); }

Result<AtenTensorHandle> hand_out(at::Tensor tensor) {
  return handle_of(new at::Tensor(std::move(tensor)));
}

class LibTorchOps final : public detail::DeviceOps {
 public:
  Status prepare(const LoadRequest&, std::string& libraries) override {
    const std::string missing = detail::make_libtorch_global();
    if (!missing.empty()) return invalid("LibTorch's libraries could not be loaded: " + missing);
    libraries = std::string("LibTorch ") + PTB_LIBTORCH_VERSION + " (" + PTB_LIBTORCH_LIB_DIR + ")";
    return {};
  }

  Result<AtenTensorHandle> view(void* data, const TensorGeometry& g, Memory memory, int device) override {
    return guarded([&]() -> Result<AtenTensorHandle> {
      auto options = at::TensorOptions().dtype(static_cast<c10::ScalarType>(g.dtype));
      options = memory == Memory::Gpu ? options.device(at::Device(at::kCUDA, index_of(device))) : options;
      std::vector<int64_t> strides = g.strides;
      if (strides.empty()) {
        const auto contiguous = c10::contiguous_strides(g.sizes);
        strides.assign(contiguous.begin(), contiguous.end());
      }
      auto* base = static_cast<uint8_t*>(data) + g.storage_offset * static_cast<int64_t>(c10::elementSize(
                                                                         static_cast<c10::ScalarType>(g.dtype)));
      return hand_out(at::from_blob(base, g.sizes, strides, options));
    });
  }

  Result<AtenTensorHandle> empty(const std::vector<int64_t>& sizes, int32_t dtype, int device,
                                 cudaStream_t stream) override {
    return guarded([&]() -> Result<AtenTensorHandle> {
      c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromExternal(stream, index_of(device)));
      return hand_out(at::empty(sizes, at::TensorOptions()
                                           .dtype(static_cast<c10::ScalarType>(dtype))
                                           .device(at::Device(at::kCUDA, index_of(device)))));
    });
  }

  Result<AtenTensorHandle> alias(AtenTensorHandle tensor) override { return hand_out(tensor_of(tensor)); }

  void release(AtenTensorHandle tensor) override { delete &tensor_of(tensor); }
  void forget(AtenTensorHandle tensor) override { release(tensor); }

  TensorGeometry geometry(AtenTensorHandle tensor) override {
    const at::Tensor& t = tensor_of(tensor);
    return {static_cast<int32_t>(t.scalar_type()), t.sizes().vec(), t.strides().vec(), t.storage_offset()};
  }

  void* data(AtenTensorHandle tensor) override { return tensor_of(tensor).data_ptr(); }

  Memory memory(AtenTensorHandle tensor) override { return tensor_of(tensor).is_cuda() ? Memory::Gpu : Memory::Host; }

  Status copy(AtenTensorHandle dst, AtenTensorHandle src, int device, cudaStream_t stream) override {
    return guarded([&]() -> Status {
      c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromExternal(stream, index_of(device)));
      at::Tensor& target = tensor_of(dst);
      target.copy_(tensor_of(src), /*non_blocking=*/target.is_cuda());
      return {};
    });
  }

  std::unique_ptr<detail::BlobCopyRoute> route_blob_copies(const detail::LoadedLibrary& library, Bytes library_elf,
                                                           Bytes blob, uint64_t min_bytes,
                                                           detail::BlobCopyRoute::Copier copier,
                                                           std::string& why_not) override {
    auto redirect = CopyRedirect::install(library, library_elf, blob, min_bytes, std::move(copier));
    if (!redirect->active()) {
      why_not = redirect->why_not();
      return nullptr;
    }
    return redirect;
  }

  cudaError_t plain_memcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) override {
    return cudaMemcpy(dst, src, bytes, kind);
  }

  // LibTorch's caching allocator must be told of a capture (a private
  // memory pool), which its own CUDAGraph does and this driver does not.
  std::string graphs_unsupported() const override {
    return "the LibTorch runtime does not capture CUDA graphs; the built-in runtime does";
  }

  void begin_call(int, cudaStream_t) override {}
  void end_call(int) override {}
};

Result<std::unique_ptr<detail::ModelBackend>> load(const LoadRequest& request) {
  return guarded([&]() -> Result<std::unique_ptr<detail::ModelBackend>> {
    c10::cuda::CUDAGuard guard(index_of(request.device));
    return detail::load_container(request, std::make_unique<LibTorchOps>());
  });
}

std::string describe() { return std::string("LibTorch ") + PTB_LIBTORCH_VERSION; }

const detail::RuntimeModule module_table = [] {
  detail::RuntimeModule table;
  table.describe = describe;
  table.load = load;
  table.pinned_upload_gb_per_second = detail::measure_pinned_upload;
  return table;
}();

}  // namespace
}  // namespace ptb::libtorch

extern "C" __attribute__((visibility("default"))) const ptb::detail::RuntimeModule* ptbundle_runtime_module() {
  return &ptb::libtorch::module_table;
}
