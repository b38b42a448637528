// AOTInductor's model-container C ABI, as a table of entry points looked up
// in one loaded library. The signatures are those of
// torch/csrc/inductor/aoti_runtime/interface.h (PyTorch 2.6 to 2.11); they are
// declared here rather than taken from that header because a library built
// by another PyTorch exports a different subset, and each entry point but
// the five a run needs is optional.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ptbundle/base/result.h"
#include "runner/loaded_library.h"

// As torch/csrc/inductor/aoti_torch/c/shim.h declares it (the same alias
// may be declared twice): an at::Tensor* under LibTorch, a
// ptb::builtin::Tensor* under the built-in runtime.
struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;

namespace ptb::detail {

struct ContainerOpaque;
using ContainerHandle = ContainerOpaque*;
using AotiError = int32_t;  // AOTIRuntimeError: 0 is success
inline constexpr AotiError kAotiSuccess = 0;

// AOTInductorConstantMapEntry: the Pairs entry points take an array of these.
struct ConstantEntry {
  const char* name;
  AtenTensorHandle handle;
};

struct AotiAbi {
  AotiError (*create_with_device)(ContainerHandle*, size_t num_models, const char* device, const char* cubin_dir) =
      nullptr;
  AotiError (*destroy)(ContainerHandle) = nullptr;
  AotiError (*get_num_inputs)(ContainerHandle, size_t*) = nullptr;
  AotiError (*get_num_outputs)(ContainerHandle, size_t*) = nullptr;
  AotiError (*run)(ContainerHandle, AtenTensorHandle* inputs, size_t num_inputs, AtenTensorHandle* outputs,
                   size_t num_outputs, void* stream, void* proxy_executor) = nullptr;
  // Optional.
  AotiError (*run_single_threaded)(ContainerHandle, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, void*,
                                   void*) = nullptr;
  AotiError (*get_input_name)(ContainerHandle, size_t, const char**) = nullptr;
  AotiError (*get_output_name)(ContainerHandle, size_t, const char**) = nullptr;
  AotiError (*get_num_constants)(ContainerHandle, size_t*) = nullptr;
  AotiError (*get_constant_name)(ContainerHandle, size_t, const char**) = nullptr;
  AotiError (*get_constant_original_fqn)(ContainerHandle, size_t, const char**) = nullptr;
  AotiError (*get_constant_dtype)(ContainerHandle, size_t, int32_t*) = nullptr;
  AotiError (*get_constant_data_size)(ContainerHandle, size_t, size_t*) = nullptr;
  AotiError (*get_constant_from_folded)(ContainerHandle, size_t, bool*) = nullptr;
  // The map handles are std::unordered_map<std::string, AtenTensorHandle>*.
  AotiError (*extract_constants_map)(ContainerHandle, void* map, bool use_inactive) = nullptr;
  AotiError (*update_constants_from_blob)(ContainerHandle, const uint8_t* blob) = nullptr;
  AotiError (*update_user_managed_constant_buffer_pairs)(ContainerHandle, const ConstantEntry*, size_t,
                                                         bool use_inactive, bool validate_full_update) = nullptr;
  AotiError (*update_user_managed_constant_buffer)(ContainerHandle, void* map, bool use_inactive,
                                                   bool validate_full_update) = nullptr;
  AotiError (*update_constant_buffer)(ContainerHandle, void* map, bool use_inactive, bool validate_full_update) =
      nullptr;

  // Looks every entry point up; fails naming the first required one missing.
  static Result<AotiAbi> bind(const LoadedLibrary& library, const std::string& origin);
};

}  // namespace ptb::detail
