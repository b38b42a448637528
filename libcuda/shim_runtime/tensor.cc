#include "tensor.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace ptb::shim {

std::optional<uint64_t> element_size(int32_t dtype) {
  switch (dtype) {
    case kUInt8: case kInt8: case kBool: case kFloat8E5M2: case kFloat8E4M3FN: case kFloat8E5M2FNUZ:
    case kFloat8E4M3FNUZ:
      return 1;
    case kInt16: case kFloat16: case kBFloat16: case kUInt16:
      return 2;
    case kInt32: case kFloat32: case kComplex32: case kUInt32:
      return 4;
    case kInt64: case kFloat64: case kComplex64: case kUInt64:
      return 8;
    case kComplex128:
      return 16;
    default:
      return std::nullopt;
  }
}

std::string dtype_name(int32_t dtype) {
  switch (dtype) {
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt16: return "int16";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kFloat16: return "float16";
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kComplex32: return "complex32";
    case kComplex64: return "complex64";
    case kComplex128: return "complex128";
    case kBool: return "bool";
    case kBFloat16: return "bfloat16";
    case kFloat8E5M2: return "float8_e5m2";
    case kFloat8E4M3FN: return "float8_e4m3fn";
    case kFloat8E5M2FNUZ: return "float8_e5m2fnuz";
    case kFloat8E4M3FNUZ: return "float8_e4m3fnuz";
    case kUInt16: return "uint16";
    case kUInt32: return "uint32";
    case kUInt64: return "uint64";
    default: return "dtype " + std::to_string(dtype);
  }
}

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

std::string check_view(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       int32_t dtype, uint64_t storage_bytes) {
  auto item = element_size(dtype);
  if (!item) return "unknown " + dtype_name(dtype);
  if (sizes.size() != strides.size()) return "sizes and strides differ in length";
  auto elements = storage_elements_needed(sizes, strides, offset);
  if (!elements) return "negative or overflowing sizes, strides or offset";
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(*elements, *item, &bytes)) return "the view's extent overflows 64 bits";
  if (bytes > storage_bytes) {
    return "the view reaches " + std::to_string(bytes) + " bytes of a " + std::to_string(storage_bytes) +
           "-byte storage";
  }
  return "";
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

void* current_stream(int32_t device_index) {
  auto found = current_streams.find(device_index);
  return found == current_streams.end() ? nullptr : found->second;
}

void set_current_stream(int32_t device_index, void* stream) {
  if (stream) current_streams[device_index] = stream;
  else current_streams.erase(device_index);
}

std::shared_ptr<Storage> allocate(uint64_t nbytes, int32_t device_type, int32_t device_index, std::string& why) {
  auto storage = std::make_shared<Storage>();
  storage->nbytes = nbytes;
  storage->device_type = device_type;
  storage->device_index = device_type == kDeviceCuda ? device_index : 0;
  if (nbytes == 0) return storage;
  if (device_type == kDeviceCpu) {
    const uint64_t rounded = (nbytes + 63) / 64 * 64;
    storage->data = std::aligned_alloc(64, rounded);
    if (!storage->data) {
      why = "cannot allocate " + std::to_string(nbytes) + " bytes of host memory";
      return nullptr;
    }
    storage->owner = Storage::Owner::Host;
    return storage;
  }
  if (device_type != kDeviceCuda) {
    why = "device type " + std::to_string(device_type) + "; the built-in runtime has CPU (0) and CUDA (1)";
    return nullptr;
  }
  DeviceScope scope(device_index);
  keep_pool_memory(device_index);
  void* stream = current_stream(device_index);
  cudaError_t code = cudaMallocAsync(&storage->data, nbytes, static_cast<cudaStream_t>(stream));
  if (code != cudaSuccess) {
    storage->data = nullptr;
    why = "cudaMallocAsync(" + std::to_string(nbytes) + " bytes) on GPU " + std::to_string(device_index) + ": " +
          cuda_text(code);
    return nullptr;
  }
  storage->owner = Storage::Owner::CudaPool;
  storage->stream = stream;
  return storage;
}

namespace {

cudaMemcpyKind copy_kind(const Tensor& dst, const Tensor& src) {
  const bool to_gpu = dst.storage->device_type == kDeviceCuda;
  const bool from_gpu = src.storage->device_type == kDeviceCuda;
  if (to_gpu && from_gpu) return cudaMemcpyDeviceToDevice;
  if (to_gpu) return cudaMemcpyHostToDevice;
  if (from_gpu) return cudaMemcpyDeviceToHost;
  return cudaMemcpyHostToHost;
}

// A copy of the bytes a view reaches, in host memory, and back.
std::string span_bytes(const Tensor& view, uint64_t& first, std::vector<uint8_t>& host) {
  auto elements = storage_elements_needed(view.sizes, view.strides, view.storage_offset);
  first = static_cast<uint64_t>(view.storage_offset) * view.itemsize();
  const uint64_t end = *elements * view.itemsize();
  host.resize(end > first ? end - first : 0);
  if (host.empty()) return "";
  const auto* from = static_cast<const uint8_t*>(view.storage->data) + first;
  if (view.storage->device_type != kDeviceCuda) {
    std::memcpy(host.data(), from, host.size());
    return "";
  }
  auto stream = static_cast<cudaStream_t>(current_stream(view.storage->device_index));
  cudaError_t code = cudaMemcpyAsync(host.data(), from, host.size(), cudaMemcpyDeviceToHost, stream);
  if (code == cudaSuccess) code = cudaStreamSynchronize(stream);
  return code == cudaSuccess ? "" : cuda_text(code);
}

}  // namespace

std::string copy_elements(const Tensor& dst, const Tensor& src) {
  if (dst.dtype != src.dtype) return "copying " + dtype_name(src.dtype) + " into " + dtype_name(dst.dtype);
  if (dst.sizes != src.sizes) return "copying between tensors of different sizes";
  const int64_t count = src.numel();
  if (count == 0) return "";
  const uint64_t item = src.itemsize();
  const bool same_layout = dst.strides == src.strides || (dst.is_contiguous() && src.is_contiguous());
  if (same_layout) {
    auto elements = storage_elements_needed(src.sizes, src.strides, 0);
    const uint64_t bytes = *elements * item;
    if (dst.storage->device_type != kDeviceCuda && src.storage->device_type != kDeviceCuda) {
      std::memmove(dst.data(), src.data(), bytes);
      return "";
    }
    const int32_t device = dst.storage->device_type == kDeviceCuda ? dst.storage->device_index
                                                                   : src.storage->device_index;
    auto stream = static_cast<cudaStream_t>(current_stream(device));
    cudaError_t code = cudaMemcpyAsync(dst.data(), src.data(), bytes, copy_kind(dst, src), stream);
    if (code == cudaSuccess && dst.storage->device_type != kDeviceCuda) code = cudaStreamSynchronize(stream);
    return code == cudaSuccess ? "" : cuda_text(code);
  }
  // Different layouts: gather on the host (rare in AOTInductor's libraries,
  // which lay tensors out themselves; correct, not fast).
  uint64_t src_first = 0, dst_first = 0;
  std::vector<uint8_t> from, to;
  if (std::string why = span_bytes(src, src_first, from); !why.empty()) return why;
  if (std::string why = span_bytes(dst, dst_first, to); !why.empty()) return why;
  std::vector<int64_t> index(src.sizes.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t s = 0, d = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      s += index[i] * src.strides[i];
      d += index[i] * dst.strides[i];
    }
    std::memcpy(to.data() + d * static_cast<int64_t>(item), from.data() + s * static_cast<int64_t>(item), item);
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < src.sizes[i]) break;
      index[i] = 0;
    }
  }
  auto* target = static_cast<uint8_t*>(dst.storage->data) + dst_first;
  if (dst.storage->device_type != kDeviceCuda) {
    std::memcpy(target, to.data(), to.size());
    return "";
  }
  auto stream = static_cast<cudaStream_t>(current_stream(dst.storage->device_index));
  cudaError_t code = cudaMemcpyAsync(target, to.data(), to.size(), cudaMemcpyHostToDevice, stream);
  if (code == cudaSuccess) code = cudaStreamSynchronize(stream);
  return code == cudaSuccess ? "" : cuda_text(code);
}

AOTITorchError fail(const char* function, const std::string& why) {
  std::fprintf(stderr, "ptbundle aoti runtime: %s: %s\n", function, why.c_str());
  return kShimFailure;
}

}  // namespace ptb::shim
