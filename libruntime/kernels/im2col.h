// The columns of a 2-d convolution at batch 1, for computing it as one GEMM
// (convolution.cc's GEMM route): column p of the [K, P] matrix holds the
// input patch under output position p (P = out_h * out_w), row k one
// (channel, kernel row, kernel column), ordered as the weight's memory is,
// so that the packed weight is a [C_out, K] row-major matrix as it lies:
// (c, i, j) for an NCHW weight, (i, j, c) for a channels-last one. Positions
// in the padding read 0. The tests check this index math on the host
// against a direct convolution. The kernel shares im2col_tap with it, but
// writes the rest its own way (a position's origin plus a tap's offset,
// decoded once per tile), so only GPU runs check that part: the runtime's
// comparison with cuDNN before it takes the route, and bench_shims.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace ptb::builtin {

struct Im2col {
  int64_t channels = 0, height = 0, width = 0;             // the input's C, H, W
  int64_t stride_c = 0, stride_h = 0, stride_w = 0;        // its strides, in elements
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t step_h = 1, step_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;
  bool channels_inner = false;  // the weight is channels-last: k = (i * kernel_w + j) * channels + c

  PTB_HOST_DEVICE int64_t rows() const { return channels * kernel_h * kernel_w; }
  PTB_HOST_DEVICE int64_t columns() const { return out_h * out_w; }
};

// Row k of the columns: the input channel and kernel tap it reads.
struct Im2colTap {
  int64_t c = 0, i = 0, j = 0;
};

PTB_HOST_DEVICE inline Im2colTap im2col_tap(const Im2col& g, int64_t k) {
  Im2colTap t;
  if (g.channels_inner) {
    t.c = k % g.channels;
    const int64_t tap = k / g.channels;
    t.i = tap / g.kernel_w;
    t.j = tap % g.kernel_w;
  } else {
    t.j = k % g.kernel_w;
    const int64_t rest = k / g.kernel_w;
    t.i = rest % g.kernel_h;
    t.c = rest / g.kernel_h;
  }
  return t;
}

// The element of row `t` under output position (oh, ow).
PTB_HOST_DEVICE inline float im2col_value(const Im2col& g, const float* x, const Im2colTap& t, int64_t oh, int64_t ow) {
  const int64_t ih = oh * g.step_h - g.pad_h + t.i * g.dilation_h;
  const int64_t iw = ow * g.step_w - g.pad_w + t.j * g.dilation_w;
  if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return 0.f;
  return x[t.c * g.stride_c + ih * g.stride_h + iw * g.stride_w];
}

// Element `index` (row-major in [K, P]) of the columns of input `x`.
PTB_HOST_DEVICE inline float im2col_at(const Im2col& g, const float* x, int64_t index) {
  const int64_t columns = g.columns();
  const int64_t p = index % columns;
  return im2col_value(g, x, im2col_tap(g, index / columns), p / g.out_w, p % g.out_w);
}

}  // namespace ptb::builtin
