// The quantized family of the shim table: the weight-only int4 product of
// _weight_int4pack_mm and ExecuTorch's int4/5/6/8_plain_mm (engines/int4.h,
// engines/plain_mm.h compute them).
#include <cstdint>
#include <string>
#include <utility>

#include "engines/int4.h"
#include "engines/plain_mm.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// ExecuTorch added the fp16 steps to int4_plain_mm's and int6_plain_mm's
// arguments on 2026-07-09. A library built against the earlier signatures
// passes fewer arguments, so where these take the steps (int6) or the zero
// (int4) it passes group_size: a small integer, which no tensor handle is.
// Refused before any argument is read, the return slot included, since the
// arguments after it are not the library's.
constexpr uintptr_t kSmallestHandle = 65536;

AOTITorchError refuse_old_signature(const char* function, const char* argument, AtenTensorHandle value) {
  return fail(function, std::string("argument ") + argument + " holds " +
                            std::to_string(reinterpret_cast<uintptr_t>(value)) +
                            ", not a tensor: the library was compiled against ExecuTorch's signature of before "
                            "2026-07-09 (no fp16 steps), whose layout this runtime does not read; export it again "
                            "with ExecuTorch's CUDA backend of 2026-07-09 or later");
}

bool small(AtenTensorHandle handle) { return handle && reinterpret_cast<uintptr_t>(handle) < kSmallestHandle; }

AOTITorchError plain_run(const char* function, AtenTensorHandle* ret0, int bits, const PlainArgs& a) {
  if (!ret0) return fail(function, "null output handle");
  auto out = run_plain_mm(bits, a);
  if (!out.ok()) return fail(function, out.error().message);
  return hand_to_library(function, std::move(*out), ret0);
}

}  // namespace

AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2, int64_t qGroupSize,
                                                   AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda__weight_int4pack_mm";
  PTB_NEED(self, function);
  PTB_NEED(mat2, function);
  PTB_NEED(qScaleAndZeros, function);
  auto out = int4pack_mm(*tensor_of(self), *tensor_of(mat2), qGroupSize, *tensor_of(qScaleAndZeros));
  if (!out.ok()) return fail(function, out.error().message);
  return hand_to_library(function, std::move(*out), ret0);
}

AOTITorchError aoti_torch_cuda_int4_plain_mm(AtenTensorHandle self, AtenTensorHandle qdata, AtenTensorHandle scale,
                                             AtenTensorHandle scale_step, AtenTensorHandle zero,
                                             AtenTensorHandle zero_point_step, int64_t group_size,
                                             AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_int4_plain_mm";
  if (small(zero)) return refuse_old_signature(function, "zero", zero);
  for (AtenTensorHandle h : {self, qdata, scale, scale_step, zero, zero_point_step}) PTB_NEED(h, function);
  PlainArgs a{tensor_of(self), tensor_of(qdata), nullptr, tensor_of(scale), tensor_of(scale_step), tensor_of(zero),
              tensor_of(zero_point_step), group_size};
  return plain_run(function, ret0, 4, a);
}

AOTITorchError aoti_torch_cuda_int5_plain_mm(AtenTensorHandle self, AtenTensorHandle ql, AtenTensorHandle qh,
                                             AtenTensorHandle scale, AtenTensorHandle scale_step,
                                             AtenTensorHandle zero, AtenTensorHandle zero_point_step,
                                             int64_t group_size, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_int5_plain_mm";
  for (AtenTensorHandle h : {self, ql, qh, scale, scale_step, zero, zero_point_step}) PTB_NEED(h, function);
  PlainArgs a{tensor_of(self),       tensor_of(ql),   tensor_of(qh),
              tensor_of(scale),      tensor_of(scale_step), tensor_of(zero),
              tensor_of(zero_point_step), group_size};
  return plain_run(function, ret0, 5, a);
}

AOTITorchError aoti_torch_cuda_int6_plain_mm(AtenTensorHandle self, AtenTensorHandle ql, AtenTensorHandle qh,
                                             AtenTensorHandle scale, AtenTensorHandle steps, int64_t group_size,
                                             AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_int6_plain_mm";
  if (small(steps)) return refuse_old_signature(function, "steps", steps);
  for (AtenTensorHandle h : {self, ql, qh, scale, steps}) PTB_NEED(h, function);
  PlainArgs a{tensor_of(self), tensor_of(ql), tensor_of(qh), tensor_of(scale), tensor_of(steps), nullptr, nullptr,
              group_size};
  return plain_run(function, ret0, 6, a);
}

AOTITorchError aoti_torch_cuda_int8_plain_mm(AtenTensorHandle self, AtenTensorHandle qdata, AtenTensorHandle scale,
                                             AtenTensorHandle zero, int64_t group_size, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_int8_plain_mm";
  for (AtenTensorHandle h : {self, qdata, scale, zero}) PTB_NEED(h, function);
  PlainArgs a{tensor_of(self), tensor_of(qdata), nullptr, tensor_of(scale), nullptr, tensor_of(zero), nullptr,
              group_size};
  return plain_run(function, ret0, 8, a);
}
