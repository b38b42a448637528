// The GEMM family of the shim table (engines/gemm.h computes them): mm,
// addmm, bmm, baddbmm and addmm with an activation, as ATen's mm.out,
// addmm.out, bmm.out, baddbmm.out and _addmm_activation compute them.
#include <string>
#include <utility>

#include "engines/gemm.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* function = "aoti_torch_cuda_mm_out";
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(mat2, function);
  if (tensor_of(self)->sizes.size() != 2) return fail(function, "self is not 2-d");
  return finish(function, mm_into(*tensor_of(out), *tensor_of(self), *tensor_of(mat2)));
}

AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* function = "aoti_torch_cuda_bmm_out";
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(mat2, function);
  if (tensor_of(self)->sizes.size() != 3) return fail(function, "self is not 3-d");
  return finish(function, mm_into(*tensor_of(out), *tensor_of(self), *tensor_of(mat2)));
}

AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                         AtenTensorHandle mat2, double beta, double alpha) {
  const char* function = "aoti_torch_cuda_addmm_out";
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(mat1, function);
  PTB_NEED(mat2, function);
  return finish(function, addmm_into(*tensor_of(out), *tensor_of(self), *tensor_of(mat1), *tensor_of(mat2), beta,
                                     alpha, Activation::None));
}

AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,
                                           AtenTensorHandle batch2, double beta, double alpha) {
  const char* function = "aoti_torch_cuda_baddbmm_out";
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(batch1, function);
  PTB_NEED(batch2, function);
  return finish(function, baddbmm_into(*tensor_of(out), *tensor_of(self), *tensor_of(batch1), *tensor_of(batch2), beta,
                                       alpha));
}

AOTITorchError aoti_torch_cuda__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2,
                                                 double beta, double alpha, int32_t use_gelu, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda__addmm_activation";
  PTB_NEED(self, function);
  PTB_NEED(mat1, function);
  PTB_NEED(mat2, function);
  const Tensor& a = *tensor_of(mat1);
  const Tensor& b = *tensor_of(mat2);
  if (a.sizes.size() != 2 || b.sizes.size() != 2) return fail(function, "mat1 and mat2 must be 2-d");
  Tensor shape = a;
  shape.sizes = {a.sizes[0], b.sizes[1]};
  auto out = empty_like(shape);
  if (!out) return fail(function, out.error().message);
  Status done = addmm_into(*out, *tensor_of(self), a, b, beta, alpha, use_gelu ? Activation::Gelu : Activation::Relu);
  if (!done.ok()) return fail(function, done.error().message);
  return hand_to_library(function, std::move(*out), ret0);
}
