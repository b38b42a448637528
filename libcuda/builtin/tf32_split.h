// 3xTF32: a float32 product on TF32 tensor cores with float32's accuracy
// (gemm.cc says when it serves). Each operand element x is split into big,
// a TF32 value, and small, the float32 remainder; a product over k' = 3k
// pairs A's row [big, small, big] with B's column [big, big, small], which
// sums big*big + small*big + big*small and drops only small*small (2^-22 of
// each product). Shared by the kernel (tf32_split.cu) and the CPU tests,
// which simulate the tensor cores' TF32 inputs on the host.
#pragma once

#include <cstdint>
#include <cstring>

#include "host_device.h"

namespace ptb::builtin {

struct Tf32Parts {
  float big = 0, small = 0;
};

PTB_HOST_DEVICE inline uint32_t float_bits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}

PTB_HOST_DEVICE inline float bits_float(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

// big rounds x to nearest in TF32's 10-bit significand; a value that would
// carry to infinity is truncated instead. Infinities and NaN stay in big,
// with small 0, so that a product sees them as a float32 product would.
PTB_HOST_DEVICE inline Tf32Parts tf32_parts(float x) {
  constexpr uint32_t kExponent = 0x7f800000u, kDropped = 0x1fffu;
  const uint32_t bits = float_bits(x);
  if ((bits & kExponent) == kExponent) return {x, 0.0f};
  uint32_t rounded = (bits + 0x1000u) & ~kDropped;
  if ((rounded & kExponent) == kExponent) rounded = bits & ~kDropped;
  const float big = bits_float(rounded);
  return {big, x - big};
}

// Part `part` (0, 1, 2) of a split row: A's rows (small_last false) are
// [big, small, big], B's columns (small_last true) [big, big, small].
PTB_HOST_DEVICE inline float tf32_part(const Tf32Parts& parts, int part, bool small_last) {
  return part == (small_last ? 2 : 1) ? parts.small : parts.big;
}

// Writes x's element (o, j) of a logical [outer, k] operand, read at
// x[o * outer_stride + j * k_stride], as its three parts: part p at
// y[o * y_outer_stride + (p * k + j) * y_k_stride].
PTB_HOST_DEVICE inline void tf32_split_element(const float* x, int64_t o, int64_t j, int64_t k, int64_t outer_stride,
                                               int64_t k_stride, float* y, int64_t y_outer_stride, int64_t y_k_stride,
                                               bool small_last) {
  const Tf32Parts parts = tf32_parts(x[o * outer_stride + j * k_stride]);
  float* out = y + o * y_outer_stride + j * y_k_stride;
  for (int part = 0; part < 3; ++part) out[part * k * y_k_stride] = tf32_part(parts, part, small_last);
}

// One split operand as cuBLASLt reads it: column-major rows x cols with
// leading dimension ld, transposed or not; and the strides to write it at.
struct SplitOperand {
  int64_t rows = 0, cols = 0, ld = 0;
  bool transpose = false;
  int64_t outer_stride = 0, k_stride = 0;  // tf32_split_element's y strides
  uint64_t floats() const { return static_cast<uint64_t>(cols) * static_cast<uint64_t>(ld); }
};

// Where the split operands of a column-major m x n = op(A) m x k * op(B)
// k x n product lie in one allocation: A' then B' (at b_offset floats),
// each in its source's orientation, so that the split pass reads and
// writes along the same contiguous dimension (a Linear's weight transpose
// has k contiguous, a plain [k, n] mat2 has n). A k-contiguous operand
// becomes rows of 3k, the other one column of its rows per k' index;
// leading dimensions are padded to 4 floats so that B' stays 16-byte
// aligned. a_transposed / b_transposed: how the source operands are read.
struct SplitLayout {
  SplitOperand a, b;
  uint64_t b_offset = 0, bytes = 0;
};

inline int64_t split_padded(int64_t floats) { return (floats + 3) / 4 * 4; }

inline SplitOperand split_operand(int64_t outer, int64_t k3, bool k_contiguous, bool is_a) {
  SplitOperand s;
  if (k_contiguous) {
    s.ld = split_padded(k3);
    s.outer_stride = s.ld, s.k_stride = 1;
    s.rows = k3, s.cols = outer;
  } else {
    s.ld = split_padded(outer);
    s.outer_stride = 1, s.k_stride = s.ld;
    s.rows = outer, s.cols = k3;
  }
  // Stored k' x outer, A's op must transpose it to m x k'; stored outer x
  // k', B's op must transpose it to k' x n.
  s.transpose = is_a == k_contiguous;
  return s;
}

inline SplitLayout split_layout(int64_t m, int64_t n, int64_t k, bool a_transposed, bool b_transposed) {
  SplitLayout layout;
  // A source read transposed is stored k x m: k contiguous; a B source read
  // as is is stored k x n: k contiguous too.
  layout.a = split_operand(m, 3 * k, a_transposed, true);
  layout.b = split_operand(n, 3 * k, !b_transposed, false);
  layout.b_offset = layout.a.floats();
  layout.bytes = (layout.a.floats() + layout.b.floats()) * sizeof(float);
  return layout;
}

}  // namespace ptb::builtin
