// A CUDA runtime error as the runner's messages name it.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace ptb::detail {

// "cudaErrorMemoryAllocation: out of memory"
inline std::string cuda_error(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

}  // namespace ptb::detail
