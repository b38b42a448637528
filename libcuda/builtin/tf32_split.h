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

}  // namespace ptb::builtin
