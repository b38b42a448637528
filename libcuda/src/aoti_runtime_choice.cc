#include <algorithm>
#include <map>

#include "ptbundle/cuda/aoti_runtime.h"

namespace ptb {
namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// What fixes a library that imports `shim`.
std::string fix_for(const std::string& shim) {
  if (shim.find("scaled_dot_product") != std::string::npos) {
    return "export with ExecuTorch's Triton SDPA (its CUDA backend replaces SDPA with a Triton kernel), or build "
           "ptbundle with LibTorch";
  }
  for (const char* gemm : {"_mm_out", "_addmm_out", "_bmm_out", "_baddbmm_out", "_addmm_activation", "convolution",
                           "_mm_plus_mm_out"}) {
    if (shim.find(gemm) != std::string::npos) {
      return "compile with max_autotune and Triton-only GEMM and convolution backends "
             "(max_autotune_gemm_backends=\"TRITON\", max_autotune_conv_backends=\"TRITON\"), as ExecuTorch's CUDA "
             "backend does, or build ptbundle with LibTorch";
    }
  }
  if (shim == "aoti_torch_proxy_executor_call_function") {
    return "the library calls custom operators through a proxy executor; build ptbundle with LibTorch";
  }
  return "an ATen operator the library falls back to; export without it or build ptbundle with LibTorch";
}

}  // namespace

const char* aoti_runtime_name(AotiRuntime runtime) {
  switch (runtime) {
    case AotiRuntime::Auto: return "auto";
    case AotiRuntime::Builtin: return "builtin";
    case AotiRuntime::LibTorch: return "libtorch";
  }
  return "?";
}

std::optional<AotiRuntime> parse_aoti_runtime(const std::string& text) {
  for (AotiRuntime runtime : {AotiRuntime::Auto, AotiRuntime::Builtin, AotiRuntime::LibTorch})
    if (text == aoti_runtime_name(runtime)) return runtime;
  return std::nullopt;
}

const std::vector<std::string>& builtin_aoti_shims() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list{
        // numbering
        "aoti_torch_device_type_cpu", "aoti_torch_device_type_cuda", "aoti_torch_device_type_meta",
        "aoti_torch_device_type_xpu", "aoti_torch_device_type_mps", "aoti_torch_device_type_privateuse1",
        "aoti_torch_dtype_float8_e5m2", "aoti_torch_dtype_float8_e4m3fn", "aoti_torch_dtype_float8_e5m2fnuz",
        "aoti_torch_dtype_float8_e4m3fnuz", "aoti_torch_dtype_bfloat16", "aoti_torch_dtype_float16",
        "aoti_torch_dtype_float32", "aoti_torch_dtype_float64", "aoti_torch_dtype_uint8", "aoti_torch_dtype_uint16",
        "aoti_torch_dtype_uint32", "aoti_torch_dtype_uint64", "aoti_torch_dtype_int8", "aoti_torch_dtype_int16",
        "aoti_torch_dtype_int32", "aoti_torch_dtype_int64", "aoti_torch_dtype_bool", "aoti_torch_dtype_complex32",
        "aoti_torch_dtype_complex64", "aoti_torch_dtype_complex128", "aoti_torch_dtype_element_size",
        "aoti_torch_layout_strided", "aoti_torch_layout_sparse_coo", "aoti_torch_layout_sparse_csr",
        "aoti_torch_layout_sparse_csc", "aoti_torch_layout_sparse_bsr", "aoti_torch_layout_sparse_bsc",
        "aoti_torch_layout__mkldnn", "aoti_torch_layout_jagged", "aoti_torch_memory_format_contiguous_format",
        "aoti_torch_memory_format_channels_last", "aoti_torch_memory_format_channels_last_3d",
        "aoti_torch_memory_format_preserve_format",
        // modes and diagnostics
        "aoti_torch_grad_mode_is_enabled", "aoti_torch_grad_mode_set_enabled", "aoti_torch_warn", "aoti_torch_check",
        // tensors
        "aoti_torch_empty_strided", "aoti_torch_create_tensor_from_blob", "aoti_torch_create_tensor_from_blob_v2",
        "aoti_torch_delete_tensor_object", "aoti_torch_new_tensor_handle", "aoti_torch__reinterpret_tensor",
        "aoti_torch_as_strided", "aoti_torch__alloc_from_pool", "aoti_torch_clone",
        "aoti_torch_clone_preserve_strides", "aoti_torch_copy_", "aoti_torch_assign_tensors",
        "aoti_torch_assign_tensors_out", "aoti_torch_zero_",
        // getters
        "aoti_torch_get_data_ptr", "aoti_torch_get_mutable_data_ptr", "aoti_torch_get_const_data_ptr",
        "aoti_torch_get_storage_size", "aoti_torch_get_storage_numel", "aoti_torch_get_dim", "aoti_torch_get_numel",
        "aoti_torch_get_sizes", "aoti_torch_get_size", "aoti_torch_get_strides", "aoti_torch_get_stride",
        "aoti_torch_get_dtype", "aoti_torch_get_device_type", "aoti_torch_get_device_index", "aoti_torch_get_layout",
        "aoti_torch_get_storage_offset", "aoti_torch_is_contiguous", "aoti_torch_is_defined",
        // streams and devices
        "aoti_torch_create_cuda_guard", "aoti_torch_delete_cuda_guard", "aoti_torch_cuda_guard_set_index",
        "aoti_torch_create_cuda_stream_guard", "aoti_torch_delete_cuda_stream_guard",
        "aoti_torch_get_current_cuda_stream", "aoti_torch_create_device_guard", "aoti_torch_delete_device_guard",
        "aoti_torch_device_guard_set_index", "aoti_torch_get_current_device_index"};
    std::sort(list.begin(), list.end());
    return list;
  }();
  return names;
}

std::vector<std::string> libtorch_dependencies(const ElfDynamicSymbols& symbols) {
  std::vector<std::string> found;
  for (const std::string& needed : symbols.needed)
    if (starts_with(needed, "libtorch") || starts_with(needed, "libc10")) found.push_back(needed);
  return found;
}

std::vector<std::string> missing_builtin_shims(const ElfDynamicSymbols& symbols) {
  const auto& provided = builtin_aoti_shims();
  std::vector<std::string> missing;
  for (const std::string& name : symbols.undefined) {
    if (!starts_with(name, "aoti_")) continue;
    if (!std::binary_search(provided.begin(), provided.end(), name)) missing.push_back(name);
  }
  return missing;
}

std::string missing_shims_message(const std::string& origin, const std::vector<std::string>& missing) {
  std::map<std::string, std::vector<std::string>> by_fix;
  for (const std::string& name : missing) by_fix[fix_for(name)].push_back(name);
  std::string text = origin + ": the built-in AOTInductor runtime lacks " + std::to_string(missing.size()) +
                     (missing.size() == 1 ? " function" : " functions") + " the library imports:";
  bool first = true;
  for (const auto& [fix, names] : by_fix) {
    std::string listed;
    for (const auto& name : names) listed += (listed.empty() ? "" : ", ") + name;
    text += std::string(first ? " " : "; ") + listed + " (fix: " + fix + ")";
    first = false;
  }
  return text;
}

Result<RuntimeChoice> choose_runtime(Bytes library, const std::string& origin, AotiRuntime wanted,
                                     RuntimeAvailability available) {
  PTB_TRY(ElfDynamicSymbols symbols, read_dynamic_symbols(library, origin));
  const std::vector<std::string> libtorch = libtorch_dependencies(symbols);
  std::string listed;
  for (const auto& name : libtorch) listed += (listed.empty() ? "" : ", ") + name;
  const std::string no_libtorch_runner = "this build has no LibTorch runner (" + libtorch_status() +
                                         "); rebuild with " + kLibTorchFlags;

  if (wanted == AotiRuntime::LibTorch) {
    if (!available.libtorch) return usage_error("--runtime libtorch: " + no_libtorch_runner);
    return RuntimeChoice{AotiRuntime::LibTorch, "asked for"};
  }
  if (!libtorch.empty()) {
    const std::string linked = origin + ": the library is linked to LibTorch (it needs " + listed + ")";
    if (wanted == AotiRuntime::Builtin) {
      return invalid(linked + "; the built-in runtime runs libraries compiled with "
                              "aot_inductor.link_libtorch=False (as ExecuTorch's CUDA backend compiles them)");
    }
    if (!available.libtorch) {
      return invalid(linked + ", and " + no_libtorch_runner +
                     ", or compile the part with aot_inductor.link_libtorch=False as ExecuTorch's CUDA backend does");
    }
    return RuntimeChoice{AotiRuntime::LibTorch, "the library is linked to LibTorch (" + listed + ")"};
  }
  const std::vector<std::string> missing = missing_builtin_shims(symbols);
  if (!missing.empty()) {
    if (wanted == AotiRuntime::Auto && available.libtorch) {
      std::string names;
      for (const auto& name : missing) names += (names.empty() ? "" : ", ") + name;
      return RuntimeChoice{AotiRuntime::LibTorch, "the built-in runtime lacks " + names};
    }
    return invalid(missing_shims_message(origin, missing));
  }
  if (!available.builtin) {
    if (wanted == AotiRuntime::Auto && available.libtorch) {
      return RuntimeChoice{AotiRuntime::LibTorch, "this build has no built-in runtime"};
    }
    return usage_error(std::string("the built-in runtime is not in this build (") + PTB_BUILTIN_RUNTIME_STATUS + ")");
  }
  return RuntimeChoice{AotiRuntime::Builtin, "the library needs no LibTorch (compiled with link_libtorch=False)"};
}

}  // namespace ptb
