#include "libtorch_global.h"

#include <dlfcn.h>

#include "ptbundle/cuda/runner_config.h"

namespace ptb::detail {

std::string make_libtorch_global() {
  static const std::string missing = [] {
    std::string failures;
    for (const char* name : {"libc10.so", "libc10_cuda.so", "libtorch_cpu.so", "libtorch_cuda.so", "libtorch.so"}) {
      // Already loaded (as this program's dependency): promote it to global.
      if (::dlopen(name, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) continue;
      std::string path = std::string(PTB_LIBTORCH_LIB_DIR) + "/" + name;
      if (!::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) failures += std::string(failures.empty() ? "" : "; ") + ::dlerror();
    }
    return failures;
  }();
  return missing;
}

}  // namespace ptb::detail
