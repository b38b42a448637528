#include "shims/shim_support.h"

#include <cstdio>
#include <new>

namespace ptb::builtin {

AOTITorchError hand_to_library(const char* function, Tensor&& tensor, AtenTensorHandle* ret) {
  if (!ret) return fail(function, "no place for the result");
  auto* owned = new (std::nothrow) Tensor(std::move(tensor));
  if (!owned) return fail(function, "out of host memory");
  *ret = handle_of(owned);
  return kShimSuccess;
}

AOTITorchError fail(const char* function, const std::string& why) {
  std::fprintf(stderr, "ptbundle aoti runtime: %s: %s\n", function, why.c_str());
  return kShimFailure;
}

}  // namespace ptb::builtin
