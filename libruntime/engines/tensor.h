// The tensor behind every AtenTensorHandle the built-in runtime hands out: a
// strided view (sizes, strides and offset in elements, as in ATen) of a
// storage that several views may share. A storage is memory this runtime
// allocated (freed when its last view is deleted) or memory it was lent
// (create_tensor_from_blob: never freed here).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/dtype.h"
#include "kernels/kernels.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

enum : int32_t { kDeviceCpu = 0, kDeviceCuda = 1, kDeviceMeta = 9, kDeviceXpu = 12, kDeviceMps = 13,
                 kDevicePrivateUse1 = 20 };
enum : int32_t { kLayoutStrided = 0, kLayoutSparseCoo = 1, kLayoutSparseCsr = 2, kLayoutMkldnn = 3,
                 kLayoutSparseCsc = 4, kLayoutSparseBsr = 5, kLayoutSparseBsc = 6, kLayoutJagged = 7 };
enum : int32_t { kContiguousFormat = 0, kPreserveFormat = 1, kChannelsLast = 2, kChannelsLast3d = 3 };

struct Storage {
  void* data = nullptr;
  uint64_t nbytes = 0;
  int32_t device_type = kDeviceCpu;
  int32_t device_index = 0;
  enum class Owner { Lent, Host, CudaPool } owner = Owner::Lent;
  void* stream = nullptr;  // CudaPool: the stream it was allocated on, and is freed on
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();
};

struct Tensor {
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;  // in elements
  int32_t dtype = ScalarType::Float;
  int32_t layout = kLayoutStrided;

  uint64_t itemsize() const { return *scalar_type_size(dtype); }
  void* data() const;
  int64_t numel() const;
  bool is_contiguous() const;
};

// Row-major strides for `sizes` (a size-0 or size-1 dimension gets the
// stride it would have at size 1, as ATen gives it).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

// Elements a view reaches from the storage's start: offset + sum((size-1) *
// stride) + 1, or 0 when some size is 0; nullopt on negative sizes, strides
// or offset, or on overflow.
std::optional<uint64_t> storage_elements_needed(const std::vector<int64_t>& sizes,
                                                const std::vector<int64_t>& strides, int64_t offset);

// Checks a view of `dtype` against its storage: an error says why it does
// not fit.
Status check_view(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                  int32_t dtype, uint64_t storage_bytes);

// Memory for `nbytes` on the device: host memory aligned to 64 bytes, or
// CUDA memory from the stream-ordered pool on the thread's current stream.
Result<std::shared_ptr<Storage>> allocate(uint64_t nbytes, int32_t device_type, int32_t device_index);

// The stream a CUDA stream guard made current on this thread for `device`
// (the legacy default stream, nullptr, otherwise).
void* current_stream(int32_t device_index);
void set_current_stream(int32_t device_index, void* stream);

// Copies `src`'s elements into `dst` (same sizes; any strides, devices and
// dtypes, converted as ATen's copy_ converts them), in order on the current
// stream; a copy into host memory is finished when it returns. Dense views
// of one dtype with equal strides are one cudaMemcpyAsync; others go through
// the strided-copy kernel (strided_copy.cu) on the GPU.
Status copy_elements(const Tensor& dst, const Tensor& src);

// A new contiguous GPU tensor like `like` (sizes, dtype, device), on the
// current stream.
Result<Tensor> empty_like(const Tensor& like);
// A new contiguous tensor on GPU `device`, on the current stream.
Result<Tensor> empty_cuda(const std::vector<int64_t>& sizes, int32_t dtype, int32_t device);
// The same with `strides` (the storage the view reaches).
Result<Tensor> empty_strided_cuda(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                                  int32_t dtype, int32_t device);

// The stream the library made current for this tensor's GPU.
inline cudaStream_t stream_for(const Tensor& tensor) {
  return static_cast<cudaStream_t>(current_stream(tensor.storage->device_index));
}

// A kernel's view of a tensor; false when it has more dimensions than the
// kernels take (kernels::kMaxDims).
bool kernel_view(const Tensor& tensor, kernels::View& view);

// dst += src (same sizes; src may broadcast with 0 strides), on the GPU,
// in order on the current stream.
Status add_into(const Tensor& dst, const Tensor& src);

// A CUDA call's outcome as a Status: its error's name and description.
Status cuda_checked(cudaError_t code);

// "float32 [4, 16] (strides [16, 1])", for messages.
std::string tensor_text(const Tensor& tensor);

}  // namespace ptb::builtin
