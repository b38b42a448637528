// The tensor-handle family of the shim ABI over ptb::builtin::Tensor. The
// semantics follow LibTorch's shims (torch/csrc/inductor/aoti_torch/
// shim_common.cpp): a handle is one view; new_tensor_handle and
// reinterpret_tensor make views sharing the storage; delete frees the view,
// and the storage with its last view; create_tensor_from_blob borrows.
#include <cuda_runtime_api.h>

#include <cstring>
#include <new>

#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

std::vector<int64_t> to_vector(const int64_t* values, int64_t count) {
  if (count <= 0 || !values) return {};
  return std::vector<int64_t>(values, values + count);
}

// A new handle, or nullptr when memory ran out.
AtenTensorHandle hand_out(Tensor tensor) {
  auto* owned = new (std::nothrow) Tensor(std::move(tensor));
  return handle_of(owned);
}

AOTITorchError view_of(const char* function, const std::shared_ptr<Storage>& storage, int64_t ndim,
                       const int64_t* sizes, const int64_t* strides, int64_t offset, int32_t dtype,
                       AtenTensorHandle* ret) {
  if (!ret) return fail(function, "no place for the result");
  if (ndim < 0 || (ndim > 0 && !sizes)) return fail(function, "ndim " + std::to_string(ndim) + " without sizes");
  Tensor tensor;
  tensor.storage = storage;
  tensor.sizes = to_vector(sizes, ndim);
  tensor.strides = strides ? to_vector(strides, ndim) : contiguous_strides(tensor.sizes);
  tensor.storage_offset = offset;
  tensor.dtype = dtype;
  if (Status fits = check_view(tensor.sizes, tensor.strides, offset, dtype, storage->nbytes); !fits.ok()) {
    return fail(function, fits.error().message);
  }
  *ret = hand_out(std::move(tensor));
  return *ret ? kShimSuccess : fail(function, "out of host memory");
}

AOTITorchError from_blob(const char* function, void* data, int64_t ndim, const int64_t* sizes,
                         const int64_t* strides, int64_t offset, int32_t dtype, int32_t device_type,
                         int32_t device_index, int32_t layout, AtenTensorHandle* ret) {
  if (layout != kLayoutStrided) return fail(function, "layout " + std::to_string(layout) + "; expected strided (0)");
  if (device_type != kDeviceCpu && device_type != kDeviceCuda) {
    return fail(function, "device type " + std::to_string(device_type) + "; expected CPU (0) or CUDA (1)");
  }
  auto item = scalar_type_size(dtype);
  if (!item) return fail(function, "unknown dtype " + std::to_string(dtype));
  std::vector<int64_t> size_list = to_vector(sizes, ndim);
  std::vector<int64_t> stride_list = strides ? to_vector(strides, ndim) : contiguous_strides(size_list);
  auto elements = storage_elements_needed(size_list, stride_list, offset);
  if (!elements) return fail(function, "negative or overflowing sizes, strides or offset");
  // Lent memory: its extent is what the view reaches, which is all this
  // runtime may assume of it.
  auto storage = std::make_shared<Storage>();
  storage->data = data;
  storage->nbytes = *elements * *item;
  storage->device_type = device_type;
  storage->device_index = device_index;
  return view_of(function, storage, ndim, sizes, strides, offset, dtype, ret);
}

}  // namespace

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                                        int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  const char* function = "aoti_torch_empty_strided";
  auto item = scalar_type_size(dtype);
  if (!item) return fail(function, "unknown dtype " + std::to_string(dtype));
  if (ndim < 0 || (ndim > 0 && !sizes)) return fail(function, "ndim " + std::to_string(ndim) + " without sizes");
  std::vector<int64_t> size_list = to_vector(sizes, ndim);
  std::vector<int64_t> stride_list = strides ? to_vector(strides, ndim) : contiguous_strides(size_list);
  auto elements = storage_elements_needed(size_list, stride_list, 0);
  uint64_t bytes = 0;
  if (!elements || __builtin_mul_overflow(*elements, *item, &bytes)) {
    return fail(function, "negative or overflowing sizes or strides");
  }
  auto storage = allocate(bytes, device_type, device_index);
  if (!storage) return fail(function, storage.error().message);
  return view_of(function, *storage, ndim, size_list.data(), stride_list.data(), 0, dtype, ret);
}

AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes,
                                                  const int64_t* strides, int64_t storage_offset, int32_t dtype,
                                                  int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  return from_blob("aoti_torch_create_tensor_from_blob", data, ndim, sizes, strides, storage_offset, dtype,
                   device_type, device_index, kLayoutStrided, ret);
}

AOTITorchError aoti_torch_create_tensor_from_blob_v2(void* data, int64_t ndim, const int64_t* sizes,
                                                     const int64_t* strides, int64_t storage_offset, int32_t dtype,
                                                     int32_t device_type, int32_t device_index,
                                                     AtenTensorHandle* ret, int32_t layout,
                                                     const uint8_t* /*opaque_metadata*/,
                                                     int64_t opaque_metadata_size) {
  const char* function = "aoti_torch_create_tensor_from_blob_v2";
  // Opaque metadata describes MKL-DNN tensors, which a CUDA library has not.
  if (opaque_metadata_size > 0) return fail(function, "opaque metadata (MKL-DNN tensors) is not supported");
  return from_blob(function, data, ndim, sizes, strides, storage_offset, dtype, device_type, device_index, layout,
                   ret);
}

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  PTB_NEED(tensor, "aoti_torch_delete_tensor_object");
  delete tensor_of(tensor);
  return kShimSuccess;
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig, AtenTensorHandle* ret) {
  PTB_NEED(orig, "aoti_torch_new_tensor_handle");
  if (!ret) return fail("aoti_torch_new_tensor_handle", "no place for the result");
  *ret = hand_out(*tensor_of(orig));
  return *ret ? kShimSuccess : fail("aoti_torch_new_tensor_handle", "out of host memory");
}

AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim, const int64_t* sizes,
                                              const int64_t* strides, int64_t offset_increment,
                                              AtenTensorHandle* ret) {
  const char* function = "aoti_torch__reinterpret_tensor";
  PTB_NEED(self, function);
  const Tensor& base = *tensor_of(self);
  if (ndim > 0 && !strides) return fail(function, "no strides");
  // ATen's _reinterpret_tensor adds the offset to self's own: Inductor's
  // wrappers take views of views (a step's slice of a sequence buffer that
  // is itself a view) with offsets relative to the view they start from.
  int64_t offset = 0;
  if (__builtin_add_overflow(base.storage_offset, offset_increment, &offset)) {
    return fail(function, "offset " + std::to_string(offset_increment) + " from a view at offset " +
                              std::to_string(base.storage_offset) + " overflows");
  }
  return view_of(function, base.storage, ndim, sizes, strides, offset, base.dtype, ret);
}

AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes, const int64_t* strides,
                                     AtenTensorHandle* ret) {
  const char* function = "aoti_torch_as_strided";
  PTB_NEED(self, function);
  const Tensor& base = *tensor_of(self);
  return view_of(function, base.storage, static_cast<int64_t>(base.sizes.size()), sizes, strides,
                 base.storage_offset, base.dtype, ret);
}

AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype, int64_t ndim,
                                           const int64_t* sizes, const int64_t* strides, AtenTensorHandle* ret) {
  const char* function = "aoti_torch__alloc_from_pool";
  PTB_NEED(self, function);
  auto item = scalar_type_size(dtype);
  if (!item) return fail(function, "unknown dtype " + std::to_string(dtype));
  const Tensor& pool = *tensor_of(self);
  const int64_t base = pool.storage_offset * static_cast<int64_t>(pool.itemsize()) + offset_bytes;
  if (offset_bytes < 0 || base % static_cast<int64_t>(*item) != 0) {
    return fail(function, "offset " + std::to_string(offset_bytes) + " is not a multiple of the element size");
  }
  return view_of(function, pool.storage, ndim, sizes, strides, base / static_cast<int64_t>(*item), dtype, ret);
}

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  const char* function = "aoti_torch_clone";
  PTB_NEED(self, function);
  const Tensor& source = *tensor_of(self);
  AtenTensorHandle made = nullptr;
  std::vector<int64_t> strides = contiguous_strides(source.sizes);
  if (aoti_torch_empty_strided(static_cast<int64_t>(source.sizes.size()), source.sizes.data(), strides.data(),
                               source.dtype, source.storage->device_type, source.storage->device_index,
                               &made) != kShimSuccess)
    return kShimFailure;
  if (Status copied = copy_elements(*tensor_of(made), source); !copied.ok()) {
    delete tensor_of(made);
    return fail(function, copied.error().message);
  }
  *ret = made;
  return kShimSuccess;
}

AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  const char* function = "aoti_torch_clone_preserve_strides";
  PTB_NEED(self, function);
  const Tensor& source = *tensor_of(self);
  AtenTensorHandle made = nullptr;
  if (aoti_torch_empty_strided(static_cast<int64_t>(source.sizes.size()), source.sizes.data(),
                               source.strides.data(), source.dtype, source.storage->device_type,
                               source.storage->device_index, &made) != kShimSuccess)
    return kShimFailure;
  if (Status copied = copy_elements(*tensor_of(made), source); !copied.ok()) {
    delete tensor_of(made);
    return fail(function, copied.error().message);
  }
  *ret = made;
  return kShimSuccess;
}

AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t /*non_blocking*/) {
  const char* function = "aoti_torch_copy_";
  PTB_NEED(self, function);
  PTB_NEED(src, function);
  return finish(function, copy_elements(*tensor_of(self), *tensor_of(src)));
}

AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst) {
  PTB_NEED(src, "aoti_torch_assign_tensors");
  PTB_NEED(dst, "aoti_torch_assign_tensors");
  *tensor_of(dst) = *tensor_of(src);
  return kShimSuccess;
}

AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret) {
  return aoti_torch_new_tensor_handle(src, ret);
}

AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  const char* function = "aoti_torch_zero_";
  PTB_NEED(self, function);
  const Tensor& tensor = *tensor_of(self);
  if (!tensor.is_contiguous()) return fail(function, "only contiguous tensors are zeroed by the built-in runtime");
  const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * tensor.itemsize();
  if (bytes == 0) return kShimSuccess;
  if (tensor.storage->device_type != kDeviceCuda) {
    std::memset(tensor.data(), 0, bytes);
    return kShimSuccess;
  }
  cudaError_t code = cudaMemsetAsync(tensor.data(), 0, bytes,
                                     static_cast<cudaStream_t>(current_stream(tensor.storage->device_index)));
  return code == cudaSuccess ? kShimSuccess : fail(function, cudaGetErrorString(code));
}

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret) {
  PTB_NEED(tensor, "aoti_torch_get_data_ptr");
  *ret = tensor_of(tensor)->data();
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_mutable_data_ptr(AtenTensorHandle tensor, void** ret) {
  return aoti_torch_get_data_ptr(tensor, ret);
}

AOTITorchError aoti_torch_get_const_data_ptr(AtenTensorHandle tensor, const void** ret) {
  PTB_NEED(tensor, "aoti_torch_get_const_data_ptr");
  *ret = tensor_of(tensor)->data();
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_storage_size");
  *ret = static_cast<int64_t>(tensor_of(tensor)->storage->nbytes);
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_storage_numel");
  const Tensor& t = *tensor_of(tensor);
  *ret = static_cast<int64_t>(t.storage->nbytes / t.itemsize());
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_dim");
  *ret = static_cast<int64_t>(tensor_of(tensor)->sizes.size());
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_numel");
  *ret = tensor_of(tensor)->numel();
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret) {
  PTB_NEED(tensor, "aoti_torch_get_sizes");
  *ret = tensor_of(tensor)->sizes.data();
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_size");
  const Tensor& t = *tensor_of(tensor);
  const auto dims = static_cast<int64_t>(t.sizes.size());
  if (d < -dims || d >= dims) return fail("aoti_torch_get_size", "dimension " + std::to_string(d) + " of " + std::to_string(dims));
  *ret = t.sizes[static_cast<size_t>(d < 0 ? d + dims : d)];
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret) {
  PTB_NEED(tensor, "aoti_torch_get_strides");
  *ret = tensor_of(tensor)->strides.data();
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_stride");
  const Tensor& t = *tensor_of(tensor);
  const auto dims = static_cast<int64_t>(t.strides.size());
  if (d < -dims || d >= dims) return fail("aoti_torch_get_stride", "dimension " + std::to_string(d) + " of " + std::to_string(dims));
  *ret = t.strides[static_cast<size_t>(d < 0 ? d + dims : d)];
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_dtype");
  *ret = tensor_of(tensor)->dtype;
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_device_type");
  *ret = tensor_of(tensor)->storage->device_type;
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_device_index");
  *ret = tensor_of(tensor)->storage->device_type == kDeviceCuda ? tensor_of(tensor)->storage->device_index : -1;
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_layout");
  *ret = tensor_of(tensor)->layout;
  return kShimSuccess;
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret) {
  PTB_NEED(tensor, "aoti_torch_get_storage_offset");
  *ret = tensor_of(tensor)->storage_offset;
  return kShimSuccess;
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret) {
  PTB_NEED(tensor, "aoti_torch_is_contiguous");
  *ret = tensor_of(tensor)->is_contiguous();
  return kShimSuccess;
}

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret) {
  *ret = tensor != nullptr && tensor_of(tensor)->storage != nullptr;
  return kShimSuccess;
}
