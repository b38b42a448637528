// What every shim's code shares: the declarations (shims.h), the tensor
// (tensor.h), and the checks of the arguments a library passes.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels.h"
#include "shims.h"
#include "tensor.h"

// A null handle where the ABI wants a tensor is the library's bug; refuse it
// by name rather than crash.
#define PTB_NEED(handle, function) \
  if (!(handle)) return ::ptb::builtin::fail(function, "null tensor handle")

namespace ptb::builtin {

// The error of the last kernel launch, as a shim failure.
inline AOTITorchError check_launch(const char* function) {
  cudaError_t code = cudaGetLastError();
  if (code == cudaSuccess) return kShimSuccess;
  return fail(function, std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
}

// The stream the library made current for this tensor's GPU.
inline cudaStream_t stream_for(const Tensor& tensor) {
  return static_cast<cudaStream_t>(current_stream(tensor.storage->device_index));
}

// A kernel's view of a tensor; false when it has more dimensions than the
// kernels take (kernels::kMaxDims).
bool kernel_view(const Tensor& tensor, kernels::View& view);

// dst += src (same sizes; src may broadcast with 0 strides), on the GPU,
// in order on the current stream; "" or why not.
std::string add_into(const Tensor& dst, const Tensor& src);

// "float32 [4, 16] (strides [16, 1])", for messages.
std::string tensor_text(const Tensor& tensor);

// Hands a tensor the runtime made to the library (a new reference).
AOTITorchError hand_to_library(const char* function, Tensor&& tensor, AtenTensorHandle* ret);

}  // namespace ptb::builtin
