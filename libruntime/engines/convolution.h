// Convolution on cuDNN (convolution.cc), as ATen's convolution computes it
// on a GPU: 1 to 3 spatial dimensions, strided, padded, dilated, grouped
// and transposed, the bias added after.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

// One value per spatial dimension from the `length` values an entry point
// passes: none gives `fallback`, one is repeated, else one each.
Result<std::vector<int64_t>> convolution_per_dim(const char* name, const int64_t* values, int64_t length,
                                                 size_t spatial, int64_t fallback);

// A new tensor holding the convolution of `input` with `weight` (and
// `bias`, which may be null), in ATen's memory format for the output.
Result<Tensor> convolution(const Tensor& input, const Tensor& weight, const Tensor* bias, const ConvArgs& args);

}  // namespace ptb::builtin
