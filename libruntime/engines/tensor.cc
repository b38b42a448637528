#include "engines/tensor.h"

#include "kernels/kernels.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

namespace ptb::builtin {

Storage::~Storage() {
  if (!data) return;
  if (owner == Owner::Host) std::free(data);
  if (owner == Owner::CudaPool) cudaFreeAsync(data, static_cast<cudaStream_t>(stream));
}

void* Tensor::data() const {
  if (!storage || !storage->data) return nullptr;
  return static_cast<uint8_t*>(storage->data) + storage_offset * static_cast<int64_t>(itemsize());
}

int64_t Tensor::numel() const {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return count;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (sizes[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

std::optional<uint64_t> storage_elements_needed(const std::vector<int64_t>& sizes,
                                                const std::vector<int64_t>& strides, int64_t offset) {
  if (sizes.size() != strides.size() || offset < 0) return std::nullopt;
  uint64_t last = static_cast<uint64_t>(offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) return std::nullopt;
    if (sizes[i] == 0) return 0;
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    uint64_t span = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(sizes[i] - 1), static_cast<uint64_t>(strides[i]), &span) ||
        __builtin_add_overflow(last, span, &last))
      return std::nullopt;
  }
  if (last == UINT64_MAX) return std::nullopt;
  return last + 1;
}

Status check_view(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                  int32_t dtype, uint64_t storage_bytes) {
  auto item = scalar_type_size(dtype);
  if (!item) return invalid("unknown dtype " + std::to_string(dtype));
  if (sizes.size() != strides.size()) return invalid("sizes and strides differ in length");
  auto elements = storage_elements_needed(sizes, strides, offset);
  if (!elements) return invalid("negative or overflowing sizes, strides or offset");
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(*elements, *item, &bytes)) return invalid("the view's extent overflows 64 bits");
  if (bytes > storage_bytes) {
    return invalid("the view reaches " + std::to_string(bytes) + " bytes of a " + std::to_string(storage_bytes) +
                   "-byte storage");
  }
  return {};
}

namespace {

thread_local std::unordered_map<int32_t, void*> current_streams;

// Sets the CUDA device for the scope, when it differs.
class DeviceScope {
 public:
  explicit DeviceScope(int32_t device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      if (cudaSetDevice(device) == cudaSuccess) changed_ = true;
    }
  }
  ~DeviceScope() {
    if (changed_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
  bool changed_ = false;
};

// Once per device: the default memory pool keeps what is freed instead of
// returning it at each synchronization, so that a library's per-call
// allocations are served from the pool, as LibTorch's caching allocator
// serves them.
void keep_pool_memory(int32_t device) {
  static std::mutex mutex;
  static std::unordered_map<int32_t, bool> done;
  std::lock_guard lock(mutex);
  if (done[device]) return;
  done[device] = true;
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t threshold = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
}

std::string cuda_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

}  // namespace

Status cuda_checked(cudaError_t code) {
  if (code != cudaSuccess) return invalid(cuda_text(code));
  return {};
}

void* current_stream(int32_t device_index) {
  auto found = current_streams.find(device_index);
  return found == current_streams.end() ? nullptr : found->second;
}

void set_current_stream(int32_t device_index, void* stream) {
  if (stream) current_streams[device_index] = stream;
  else current_streams.erase(device_index);
}

Result<std::shared_ptr<Storage>> allocate(uint64_t nbytes, int32_t device_type, int32_t device_index) {
  auto storage = std::make_shared<Storage>();
  storage->nbytes = nbytes;
  storage->device_type = device_type;
  storage->device_index = device_type == kDeviceCuda ? device_index : 0;
  if (nbytes == 0) return storage;
  if (device_type == kDeviceCpu) {
    const uint64_t rounded = (nbytes + 63) / 64 * 64;
    storage->data = std::aligned_alloc(64, rounded);
    if (!storage->data) return invalid("cannot allocate " + std::to_string(nbytes) + " bytes of host memory");
    storage->owner = Storage::Owner::Host;
    return storage;
  }
  if (device_type != kDeviceCuda) {
    return invalid("device type " + std::to_string(device_type) + "; the built-in runtime has CPU (0) and CUDA (1)");
  }
  DeviceScope scope(device_index);
  keep_pool_memory(device_index);
  void* stream = current_stream(device_index);
  cudaError_t code = cudaMallocAsync(&storage->data, nbytes, static_cast<cudaStream_t>(stream));
  if (code != cudaSuccess) {
    storage->data = nullptr;
    return invalid("cudaMallocAsync(" + std::to_string(nbytes) + " bytes) on GPU " + std::to_string(device_index) +
                   ": " + cuda_text(code));
  }
  storage->owner = Storage::Owner::CudaPool;
  storage->stream = stream;
  return storage;
}

bool kernel_view(const Tensor& tensor, kernels::View& view) {
  if (tensor.sizes.size() > static_cast<size_t>(kernels::kMaxDims)) return false;
  view.data = tensor.data();
  view.dtype = tensor.dtype;
  view.dims = static_cast<int32_t>(tensor.sizes.size());
  for (size_t k = 0; k < tensor.sizes.size(); ++k) {
    view.sizes[k] = tensor.sizes[k];
    view.strides[k] = tensor.strides[k];
  }
  return true;
}

namespace {

bool on_gpu(const Tensor& tensor) { return tensor.storage->device_type == kDeviceCuda; }

cudaStream_t stream_of(const Tensor& dst, const Tensor& src) {
  const int32_t device = on_gpu(dst) ? dst.storage->device_index : src.storage->device_index;
  return static_cast<cudaStream_t>(current_stream(device));
}

// The bytes from a view's first element to one past its last, when the view
// covers them densely in row-major order.
bool dense_row_major(const Tensor& tensor) { return tensor.is_contiguous(); }

// Both on the GPU, through the kernel.
Status copy_on_gpu(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  kernels::View to, from;
  if (!kernel_view(dst, to) || !kernel_view(src, from)) {
    return invalid("a copy between layouts of more than " + std::to_string(kernels::kMaxDims) + " dimensions");
  }
  const bool same = dst.dtype == src.dtype;
  if (!same && (!kernels::copyable_dtype(dst.dtype) || !kernels::copyable_dtype(src.dtype))) {
    return invalid("converting " + std::string(scalar_type_name(src.dtype)) + " into " +
                   std::string(scalar_type_name(dst.dtype)));
  }
  cudaError_t code = kernels::strided_copy(to, from, src.numel(), stream);
  if (code != cudaSuccess) return invalid(cuda_text(code));
  return {};
}

// A contiguous GPU copy of `tensor`'s elements in `dtype`.
Result<Tensor> gpu_contiguous(const Tensor& tensor, int32_t device) {
  Tensor made;
  made.sizes = tensor.sizes;
  made.strides = contiguous_strides(tensor.sizes);
  made.dtype = tensor.dtype;
  const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * tensor.itemsize();
  PTB_TRY(made.storage, allocate(bytes, kDeviceCuda, device));
  return made;
}

}  // namespace

Result<Tensor> empty_like(const Tensor& like) { return gpu_contiguous(like, like.storage->device_index); }

Result<Tensor> empty_cuda(const std::vector<int64_t>& sizes, int32_t dtype, int32_t device) {
  return empty_strided_cuda(sizes, contiguous_strides(sizes), dtype, device);
}

Result<Tensor> empty_strided_cuda(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                  int32_t dtype, int32_t device) {
  Tensor made;
  made.sizes = sizes;
  made.strides = strides;
  made.dtype = dtype;
  auto item = scalar_type_size(dtype);
  auto elements = storage_elements_needed(sizes, made.strides, 0);
  uint64_t bytes = 0;
  if (!item || !elements || __builtin_mul_overflow(*elements, *item, &bytes)) {
    return invalid("cannot allocate " + std::string(scalar_type_name(dtype)) + " tensor of these sizes");
  }
  PTB_TRY(made.storage, allocate(bytes, kDeviceCuda, device));
  return made;
}

Status copy_elements(const Tensor& dst, const Tensor& src) {
  if (dst.sizes != src.sizes) return invalid("copying between tensors of different sizes");
  const int64_t count = src.numel();
  if (count == 0) return {};
  const cudaStream_t stream = stream_of(dst, src);
  const bool same_dtype = dst.dtype == src.dtype;
  if (same_dtype && (dst.strides == src.strides || (dense_row_major(dst) && dense_row_major(src)))) {
    const uint64_t bytes = *storage_elements_needed(src.sizes, src.strides, 0) * src.itemsize();
    if (!on_gpu(dst) && !on_gpu(src)) {
      std::memmove(dst.data(), src.data(), bytes);
      return {};
    }
    const cudaMemcpyKind kind = on_gpu(dst) ? (on_gpu(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                            : cudaMemcpyDeviceToHost;
    cudaError_t code = cudaMemcpyAsync(dst.data(), src.data(), bytes, kind, stream);
    if (code == cudaSuccess && !on_gpu(dst)) code = cudaStreamSynchronize(stream);
    if (code != cudaSuccess) return invalid(cuda_text(code));
    return {};
  }
  if (on_gpu(dst) && on_gpu(src)) return copy_on_gpu(dst, src, stream);
  if (!on_gpu(dst) && !on_gpu(src)) {
    // Host to host between layouts: an element at a time (constants the
    // library keeps on the CPU; rare and small).
    if (!same_dtype) {
      return invalid("converting " + std::string(scalar_type_name(src.dtype)) + " into " +
                     std::string(scalar_type_name(dst.dtype)) + " on the CPU");
    }
    std::vector<int64_t> index(src.sizes.size(), 0);
    const auto item = static_cast<int64_t>(src.itemsize());
    const auto* from = static_cast<const uint8_t*>(src.data());
    auto* to = static_cast<uint8_t*>(dst.data());
    for (int64_t n = 0; n < count; ++n) {
      int64_t s = 0, d = 0;
      for (size_t i = 0; i < index.size(); ++i) {
        s += index[i] * src.strides[i];
        d += index[i] * dst.strides[i];
      }
      std::memcpy(to + d * item, from + s * item, static_cast<size_t>(item));
      for (size_t i = index.size(); i-- > 0;) {
        if (++index[i] < src.sizes[i]) break;
        index[i] = 0;
      }
    }
    return {};
  }
  // Between host and GPU in different layouts: through a contiguous GPU
  // copy, which the kernel converts from or into.
  if (on_gpu(dst)) {
    if (!dense_row_major(src)) return invalid("copying a non-contiguous host tensor to the GPU");
    PTB_TRY(Tensor staged, gpu_contiguous(src, dst.storage->device_index));
    cudaError_t code = cudaMemcpyAsync(staged.data(), src.data(), static_cast<uint64_t>(count) * src.itemsize(),
                                       cudaMemcpyHostToDevice, stream);
    if (code != cudaSuccess) return invalid(cuda_text(code));
    return copy_on_gpu(dst, staged, stream);
  }
  Tensor shaped = src;
  shaped.dtype = dst.dtype;
  PTB_TRY(Tensor staged, gpu_contiguous(shaped, src.storage->device_index));
  PTB_CHECK(copy_on_gpu(staged, src, stream));
  if (!dense_row_major(dst)) return invalid("copying into a non-contiguous host tensor");
  cudaError_t code = cudaMemcpyAsync(dst.data(), staged.data(), static_cast<uint64_t>(count) * dst.itemsize(),
                                     cudaMemcpyDeviceToHost, stream);
  if (code == cudaSuccess) code = cudaStreamSynchronize(stream);
  if (code != cudaSuccess) return invalid(cuda_text(code));
  return {};
}

Status add_into(const Tensor& dst, const Tensor& src) {
  kernels::View to, from;
  if (!kernel_view(dst, to) || !kernel_view(src, from)) return invalid("an addition of more than 10 dimensions");
  if (dst.dtype != src.dtype || !is_floating_type(dst.dtype) || dst.itemsize() > 8 || dst.itemsize() < 2) {
    return invalid("adding " + std::string(scalar_type_name(src.dtype)) + " to " +
                   std::string(scalar_type_name(dst.dtype)));
  }
  cudaError_t code = kernels::add(to, from, dst.numel(), stream_of(dst, src));
  if (code != cudaSuccess) return invalid(cuda_text(code));
  return {};
}

std::string tensor_text(const Tensor& tensor) {
  auto list = [](const std::vector<int64_t>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
  };
  return std::string(scalar_type_name(tensor.dtype)) + " " + list(tensor.sizes) + " (strides " + list(tensor.strides) +
         (tensor.storage_offset ? ", offset " + std::to_string(tensor.storage_offset) : std::string()) + ")";
}

}  // namespace ptb::builtin
