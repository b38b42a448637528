// The entry point of libptbundle_aoti_runtime.so (runtime_module.h).
#include <cuda_runtime_api.h>

#include "builtin_model.h"

namespace {

std::string describe() {
  int version = 0;
  cudaRuntimeGetVersion(&version);
  return "built-in (CUDA runtime " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + ")";
}

const ptb::detail::RuntimeModule module_table = [] {
  ptb::detail::RuntimeModule table;
  table.describe = describe;
  table.load = ptb::shim::load_builtin_model;
  table.pinned_upload_gb_per_second = ptb::shim::builtin_pinned_upload;
  return table;
}();

}  // namespace

extern "C" __attribute__((visibility("default"))) const ptb::detail::RuntimeModule* ptbundle_runtime_module() {
  return &module_table;
}
