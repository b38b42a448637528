// LibTorch's own libraries, made global for the libraries that need them.
#pragma once

#include <string>

namespace ptb::detail {

// Loads LibTorch's own libraries with RTLD_GLOBAL (once per process): a
// library built with link_libtorch=False names no libtorch and finds its
// aoti_torch_* functions only in the global scope, and one linked to libtorch
// must find libtorch.so already loaded, whether or not the linker kept it as
// a dependency of this program. Returns what could not be loaded, or "".
std::string make_libtorch_global();

}  // namespace ptb::detail
