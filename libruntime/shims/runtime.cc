// The runtime family of the shim table: grad mode and the library's
// diagnostics (warnings and failed checks).
#include <cstdio>
#include <cstdlib>

#include "shims/shims.h"

namespace {
// Per thread, as in LibTorch; nothing here computes gradients, the flag is
// only kept for the library that saves and restores it.
thread_local bool grad_mode = false;
}  // namespace

bool aoti_torch_grad_mode_is_enabled() { return grad_mode; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { grad_mode = enabled; }

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "ptbundle aoti runtime: warning from the library (%s, %s:%u): %s\n", func ? func : "?",
               file ? file : "?", line, msg ? msg : "");
}

void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (cond) return;
  // LibTorch throws here; an exception cannot cross this C ABI safely, and
  // the library has no way back from a failed check.
  std::fprintf(stderr, "ptbundle aoti runtime: check failed in the library (%s, %s:%u): %s\n", func ? func : "?",
               file ? file : "?", line, msg ? msg : "");
  std::abort();
}
