// The random family of the shim table: randint_low_out (how Inductor seeds
// the random numbers its own kernels draw: every torch.rand_like or
// randn_like in a sampler), rand, randn and randint_low, drawn by
// engines/random.h.
#include <algorithm>
#include <string>
#include <vector>

#include "engines/random.h"
#include "shims/shim_support.h"

namespace {

using namespace ptb;
using namespace ptb::builtin;

AOTITorchError new_tensor(const char* function, const int64_t* size, int64_t size_len, int32_t* dtype,
                          int32_t* device, int32_t device_index, int32_t default_dtype, Tensor*& made) {
  if (device && *device != kDeviceCuda) return fail(function, "device type " + std::to_string(*device) + "; the CUDA shims make CUDA tensors");
  AtenTensorHandle handle = nullptr;
  std::vector<int64_t> sizes(size, size + std::max<int64_t>(size_len, 0));
  std::vector<int64_t> strides = contiguous_strides(sizes);
  if (aoti_torch_empty_strided(size_len, sizes.data(), strides.data(), dtype ? *dtype : default_dtype, kDeviceCuda,
                               device_index, &handle) != kShimSuccess)
    return kShimFailure;
  made = tensor_of(handle);
  return kShimSuccess;
}

}  // namespace

using namespace ptb;
using namespace ptb::builtin;

AOTITorchError aoti_torch_cuda_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high, const int64_t* size,
                                               int64_t size_len) {
  const char* function = "aoti_torch_cuda_randint_low_out";
  PTB_NEED(out, function);
  Tensor& target = *tensor_of(out);
  std::vector<int64_t> wanted(size, size + std::max<int64_t>(size_len, 0));
  if (size && wanted != target.sizes) return fail(function, "the output's sizes differ from size");
  return finish(function, random_integers(target, low, high));
}

AOTITorchError aoti_torch_cuda_randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len,
                                           int32_t* dtype, int32_t* /*layout*/, int32_t* device, int32_t device_index,
                                           int32_t* /*pin_memory*/, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_randint_low";
  Tensor* made = nullptr;
  if (new_tensor(function, size, size_len, dtype, device, device_index, ScalarType::Long, made) != kShimSuccess) return kShimFailure;
  if (finish(function, random_integers(*made, low, high)) != kShimSuccess) {
    delete made;
    return kShimFailure;
  }
  *ret0 = handle_of(made);
  return kShimSuccess;
}

AOTITorchError aoti_torch_cuda_rand(const int64_t* size, int64_t size_len, int32_t* dtype, int32_t* /*layout*/,
                                    int32_t* device, int32_t device_index, int32_t* /*pin_memory*/,
                                    AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_rand";
  Tensor* made = nullptr;
  if (new_tensor(function, size, size_len, dtype, device, device_index, ScalarType::Float, made) != kShimSuccess) return kShimFailure;
  if (finish(function, random_uniform(*made)) != kShimSuccess) {
    delete made;
    return kShimFailure;
  }
  *ret0 = handle_of(made);
  return kShimSuccess;
}

AOTITorchError aoti_torch_cuda_randn(const int64_t* size, int64_t size_len, int32_t* dtype, int32_t* /*layout*/,
                                     int32_t* device, int32_t device_index, int32_t* /*pin_memory*/,
                                     AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_randn";
  Tensor* made = nullptr;
  if (new_tensor(function, size, size_len, dtype, device, device_index, ScalarType::Float, made) != kShimSuccess) return kShimFailure;
  if (finish(function, random_normal(*made)) != kShimSuccess) {
    delete made;
    return kShimFailure;
  }
  *ret0 = handle_of(made);
  return kShimSuccess;
}
