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

#include "aoti_shim.h"

namespace ptb::shim {

// c10's numbering, which AOTInductor's libraries compile in and ExecuTorch's
// ScalarType repeats.
enum : int32_t {
  kUInt8 = 0, kInt8 = 1, kInt16 = 2, kInt32 = 3, kInt64 = 4, kFloat16 = 5, kFloat32 = 6, kFloat64 = 7,
  kComplex32 = 8, kComplex64 = 9, kComplex128 = 10, kBool = 11, kBFloat16 = 15, kFloat8E5M2 = 23,
  kFloat8E4M3FN = 24, kFloat8E5M2FNUZ = 25, kFloat8E4M3FNUZ = 26, kUInt16 = 27, kUInt32 = 28, kUInt64 = 29,
};
enum : int32_t { kDeviceCpu = 0, kDeviceCuda = 1, kDeviceMeta = 9, kDeviceXpu = 12, kDeviceMps = 13,
                 kDevicePrivateUse1 = 20 };
enum : int32_t { kLayoutStrided = 0, kLayoutSparseCoo = 1, kLayoutSparseCsr = 2, kLayoutMkldnn = 3,
                 kLayoutSparseCsc = 4, kLayoutSparseBsr = 5, kLayoutSparseBsc = 6, kLayoutJagged = 7 };
enum : int32_t { kContiguousFormat = 0, kPreserveFormat = 1, kChannelsLast = 2, kChannelsLast3d = 3 };

// Bytes per element; nullopt for dtypes this runtime does not know.
std::optional<uint64_t> element_size(int32_t dtype);
std::string dtype_name(int32_t dtype);  // "float32", or "dtype 99"

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
  int32_t dtype = kFloat32;
  int32_t layout = kLayoutStrided;

  uint64_t itemsize() const { return *element_size(dtype); }
  void* data() const;
  int64_t numel() const;
  bool is_contiguous() const;
};

inline Tensor* tensor_of(AtenTensorHandle handle) { return reinterpret_cast<Tensor*>(handle); }
inline AtenTensorHandle handle_of(Tensor* tensor) { return reinterpret_cast<AtenTensorHandle>(tensor); }

// Row-major strides for `sizes` (a size-0 or size-1 dimension gets the
// stride it would have at size 1, as ATen gives it).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

// Elements a view reaches from the storage's start: offset + sum((size-1) *
// stride) + 1, or 0 when some size is 0; nullopt on negative sizes, strides
// or offset, or on overflow.
std::optional<uint64_t> storage_elements_needed(const std::vector<int64_t>& sizes,
                                                const std::vector<int64_t>& strides, int64_t offset);

// Checks a view of `dtype` against its storage; "" when it fits, else why not.
std::string check_view(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       int32_t dtype, uint64_t storage_bytes);

// Memory for `nbytes` on the device: host memory aligned to 64 bytes, or
// CUDA memory from the stream-ordered pool on the thread's current stream.
// nullptr and `why` on failure.
std::shared_ptr<Storage> allocate(uint64_t nbytes, int32_t device_type, int32_t device_index, std::string& why);

// The stream a CUDA stream guard made current on this thread for `device`
// (the legacy default stream, nullptr, otherwise).
void* current_stream(int32_t device_index);
void set_current_stream(int32_t device_index, void* stream);

// Copies `src`'s elements into `dst` (same dtype and sizes, any strides and
// devices). Dense views with equal strides are one copy; others are
// gathered element by element on the host.
std::string copy_elements(const Tensor& dst, const Tensor& src);

// Prints "ptbundle aoti runtime: <function>: <why>" on stderr and returns
// kShimFailure.
AOTITorchError fail(const char* function, const std::string& why);

}  // namespace ptb::shim
