// The convolution family of the shim table: ATen's convolution on a GPU
// (engines/convolution.h computes it), its per-dimension arguments checked.
#include <utility>

#include "engines/convolution.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

AOTITorchError aoti_torch_cuda_convolution(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
                                           const int64_t* stride, int64_t stride_len, const int64_t* padding,
                                           int64_t padding_len, const int64_t* dilation, int64_t dilation_len,
                                           int32_t transposed, const int64_t* output_padding,
                                           int64_t output_padding_len, int64_t groups, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_convolution";
  PTB_NEED(input, function);
  PTB_NEED(weight, function);
  const Tensor& x = *tensor_of(input);
  if (x.sizes.size() < 3) return fail(function, "input " + tensor_text(x) + "; expected N, C and spatial dimensions");
  const size_t spatial = x.sizes.size() - 2;
  ConvArgs args;
  args.transposed = transposed != 0;
  args.groups = groups;
  auto s = convolution_per_dim("stride", stride, stride_len, spatial, 1);
  auto p = convolution_per_dim("padding", padding, padding_len, spatial, 0);
  auto d = convolution_per_dim("dilation", dilation, dilation_len, spatial, 1);
  auto o = convolution_per_dim("output_padding", output_padding, output_padding_len, spatial, 0);
  for (auto* r : {&s, &p, &d, &o})
    if (!r->ok()) return fail(function, r->error().message);
  args.stride = *s;
  args.padding = *p;
  args.dilation = *d;
  args.output_padding = *o;
  const Tensor* b = bias && *bias ? tensor_of(*bias) : nullptr;
  auto out = convolution(x, *tensor_of(weight), b, args);
  if (!out.ok()) return fail(function, out.error().message);
  return hand_to_library(function, std::move(*out), ret0);
}
