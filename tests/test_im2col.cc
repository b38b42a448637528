// The columns the convolution shim's GEMM route multiplies (im2col.h),
// checked on the host: for strided, padded and dilated 2-d convolutions,
// NCHW and channels-last inputs, and both weight orders, the weight as a
// [C_out, K] matrix times the columns must equal a direct convolution. On
// the GPU, the route is also compared with cuDNN before it is ever taken.
#include <cmath>
#include <random>
#include <vector>

#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "kernels/im2col.h"

using ptb::builtin::Im2col;
using ptb::builtin::im2col_at;

namespace {

struct Case {
  int64_t channels, height, width, out_channels, kernel_h, kernel_w, step, pad, dilation;
  bool channels_last_input, channels_last_weight;
};

void check_case(const Case& c) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  // Input [1, C, H, W] stored NCHW or NHWC; logical x(c, h, w).
  std::vector<float> input(static_cast<size_t>(c.channels * c.height * c.width));
  for (float& v : input) v = uniform(random);
  const int64_t sc = c.channels_last_input ? 1 : c.height * c.width;
  const int64_t sh = c.channels_last_input ? c.width * c.channels : c.width;
  const int64_t sw = c.channels_last_input ? c.channels : 1;
  auto x = [&](int64_t ch, int64_t h, int64_t w) { return input[static_cast<size_t>(ch * sc + h * sh + w * sw)]; };
  // Weight [C_out, C, kh, kw] stored OIHW or OHWI; logical wt(o, ch, i, j).
  const int64_t taps = c.channels * c.kernel_h * c.kernel_w;
  std::vector<float> weight(static_cast<size_t>(c.out_channels * taps));
  for (float& v : weight) v = uniform(random);
  auto wt = [&](int64_t o, int64_t ch, int64_t i, int64_t j) {
    const int64_t within = c.channels_last_weight ? (i * c.kernel_w + j) * c.channels + ch
                                                  : (ch * c.kernel_h + i) * c.kernel_w + j;
    return weight[static_cast<size_t>(o * taps + within)];
  };
  Im2col g;
  g.channels = c.channels;
  g.height = c.height;
  g.width = c.width;
  g.stride_c = sc;
  g.stride_h = sh;
  g.stride_w = sw;
  g.kernel_h = c.kernel_h;
  g.kernel_w = c.kernel_w;
  g.step_h = g.step_w = c.step;
  g.pad_h = g.pad_w = c.pad;
  g.dilation_h = g.dilation_w = c.dilation;
  g.out_h = (c.height + 2 * c.pad - c.dilation * (c.kernel_h - 1) - 1) / c.step + 1;
  g.out_w = (c.width + 2 * c.pad - c.dilation * (c.kernel_w - 1) - 1) / c.step + 1;
  g.channels_inner = c.channels_last_weight;
  REQUIRE(g.rows() == taps);
  std::vector<float> columns(static_cast<size_t>(g.rows() * g.columns()));
  for (int64_t index = 0; index < static_cast<int64_t>(columns.size()); ++index)
    columns[static_cast<size_t>(index)] = im2col_at(g, input.data(), index);
  double worst = 0;
  for (int64_t o = 0; o < c.out_channels; ++o) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        double direct = 0, product = 0;
        for (int64_t ch = 0; ch < c.channels; ++ch)
          for (int64_t i = 0; i < c.kernel_h; ++i)
            for (int64_t j = 0; j < c.kernel_w; ++j) {
              const int64_t h = oh * c.step - c.pad + i * c.dilation, w = ow * c.step - c.pad + j * c.dilation;
              if (h >= 0 && h < c.height && w >= 0 && w < c.width) direct += double(wt(o, ch, i, j)) * x(ch, h, w);
            }
        const int64_t p = oh * g.out_w + ow;
        for (int64_t k = 0; k < taps; ++k)
          product += double(weight[static_cast<size_t>(o * taps + k)]) * columns[static_cast<size_t>(k * g.columns() + p)];
        worst = std::max(worst, std::abs(direct - product));
      }
    }
  }
  CHECK_MESSAGE(worst < 1e-9, "largest difference " << worst);
}

}  // namespace

TEST_CASE("im2col: the GEMM route's columns times the weight make the convolution") {
  for (bool nhwc_input : {false, true}) {
    for (bool nhwc_weight : {false, true}) {
      CAPTURE(nhwc_input);
      CAPTURE(nhwc_weight);
      check_case({3, 7, 6, 4, 3, 3, 1, 1, 1, nhwc_input, nhwc_weight});  // same padding
      check_case({5, 9, 8, 2, 3, 3, 2, 1, 1, nhwc_input, nhwc_weight});  // strided
      check_case({2, 8, 9, 3, 3, 2, 1, 2, 2, nhwc_input, nhwc_weight});  // dilated, wide padding
      check_case({4, 5, 5, 3, 1, 1, 2, 0, 1, nhwc_input, nhwc_weight});  // 1x1 downsample
      check_case({3, 1, 12, 2, 1, 5, 1, 0, 1, nhwc_input, nhwc_weight});  // a 1-d convolution lifted to 2-d
    }
  }
}

#else

TEST_CASE("im2col: the GEMM route's columns") {
  ptb::test::skip("this build has no built-in runtime core (the CUDA toolkit was not found)");
}

#endif
