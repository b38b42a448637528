// What every shim entry point shares: the declarations (shims.h), the
// handle <-> tensor conversions, the checks of the arguments a library
// passes, and the one place a failure becomes an AOTITorchError.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"
#include "shims/shims.h"

// A null handle where the ABI wants a tensor is the library's bug; refuse it
// by name rather than crash.
#define PTB_NEED(handle, function) \
  if (!(handle)) return ::ptb::builtin::fail(function, "null tensor handle")

namespace ptb::builtin {

inline Tensor* tensor_of(AtenTensorHandle handle) { return reinterpret_cast<Tensor*>(handle); }
inline AtenTensorHandle handle_of(Tensor* tensor) { return reinterpret_cast<AtenTensorHandle>(tensor); }

// Prints "ptbundle aoti runtime: <function>: <why>" on stderr and returns
// kShimFailure.
AOTITorchError fail(const char* function, const std::string& why);

// kShimSuccess, or the status's message through fail().
inline AOTITorchError finish(const char* function, const Status& status) {
  return status.ok() ? kShimSuccess : fail(function, status.error().message);
}

// The error of the last kernel launch, as a shim failure.
inline AOTITorchError check_launch(const char* function) {
  cudaError_t code = cudaGetLastError();
  if (code == cudaSuccess) return kShimSuccess;
  return fail(function, std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
}

// Hands a tensor the runtime made to the library (a new reference).
AOTITorchError hand_to_library(const char* function, Tensor&& tensor, AtenTensorHandle* ret);

}  // namespace ptb::builtin
