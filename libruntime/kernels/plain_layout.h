// ExecuTorch's plain weight-only layouts: what its CUDA backend's
// int4/int5/int6/int8_plain_mm ops read (backends/cuda/runtime/shims/
// int*_plain_mm.h: the layouts since 2026-07-09, read from its tree of
// 2026-08-22; before, int4 and int6 had no fp16 steps and other
// signatures, which plain_mm.cu refuses). Per row n of the weights, k in
// natural order:
//
//   int4  ql [n, k/2] uint8: weight k in the nibble k%2 of byte k/2 (even k
//         low); scale and zero codes [n, k/group] uint8, each times an fp16
//         step per 256 weights [n, k/256]: w = scale * (u - zero)
//   int5  int4's nibbles plus a high bit: qh [n, k/8], 4 bytes per 32
//         weights, byte (k%32)/8 of them (one per group of 8); bit j holds
//         the high bit of the group's j-th even weight, bit 4+j of its j-th
//         odd one; scale and zero as int4's
//   int6  int4's nibbles plus two high bits: qh [n, k/4], 8 bytes per 32
//         weights, the 4 bytes of even weights then the 4 of odd ones, byte
//         (k%32)/8 of each half; bits 2j..2j+1 the j-th even (odd) weight's
//         high bits; signed int8 scale codes [n, k/group] times an fp16 step
//         per 256 weights; no zero: w = scale * (u - 32)
//   int8  qdata [n, k] int8; bf16 scales and int8 zeros [n, k/group]:
//         w = scale * (q - zero)
//
// plain_mm.cu's kernels read weights 8 at a time through these functions;
// the CPU tests check them against bytes laid out by those descriptions.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ptb::builtin {

struct PlainWeights {
  int32_t bits = 4;                    // 4, 5, 6 or 8
  const uint8_t* ql = nullptr;         // int4/5/6: [n, k/2]; int8: [n, k] int8
  const uint8_t* qh = nullptr;         // int5: [n, k/8]; int6: [n, k/4]
  const uint8_t* scale = nullptr;      // codes [n, k/group]; int8: bf16 [n, k/group]
  const uint16_t* scale_step = nullptr;  // fp16 [n, k/256] (int4/5/6)
  const uint8_t* zero = nullptr;       // int4/5: uint8 codes, int8: int8 [n, k/group]
  const uint16_t* zero_step = nullptr;   // fp16 [n, k/256] (int4/5)
  uint32_t k = 0, group = 0;
};

PTB_HOST_DEVICE inline float float_of_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
#endif
}

PTB_HOST_DEVICE inline float half_bits_to_float(uint16_t bits) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(bits));  // one conversion instruction
#else
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * (1.f / 16777216.f);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t wide_exponent = exponent == 31 ? 255u : exponent - 15 + 127;
  return float_of_bits(sign | (wide_exponent << 23) | (mantissa << 13));
#endif
}

PTB_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t bits) { return float_of_bits(static_cast<uint32_t>(bits) << 16); }

// 4 bytes at a 4-byte aligned address, one load on the GPU.
PTB_HOST_DEVICE inline uint32_t load_u32(const uint8_t* at) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(at);
#else
  uint32_t value;
  std::memcpy(&value, at, 4);
  return value;
#endif
}

// The low bits of weights (n, k0) .. (n, k0 + 7), k0 a multiple of 8:
// int4/5/6's eight nibbles in word[0]; int8's eight bytes in word[0] and
// word[1]. A kernel may load them itself, several octets at once
// (plain_mm.cu loads four in one 16-byte load), and decode them below.
struct PlainLow {
  uint32_t word[2] = {0, 0};
};

PTB_HOST_DEVICE inline uint64_t plain_low_offset(const PlainWeights& w, uint32_t n, uint32_t k0) {
  return w.bits == 8 ? static_cast<uint64_t>(n) * w.k + k0 : static_cast<uint64_t>(n) * (w.k / 2) + k0 / 2;
}

PTB_HOST_DEVICE inline PlainLow plain_low8(const PlainWeights& w, uint32_t n, uint32_t k0) {
  const uint8_t* at = w.ql + plain_low_offset(w, n, k0);
  PlainLow low;
  low.word[0] = load_u32(at);
  if (w.bits == 8) low.word[1] = load_u32(at + 4);
  return low;
}

// The stored values of weights (n, k0) .. (n, k0 + 7) from their low bits
// and at most two bytes of high bits: unsigned for int4/5/6, signed for
// int8.
PTB_HOST_DEVICE inline void plain_codes8(const PlainWeights& w, uint32_t n, uint32_t k0, const PlainLow& bits,
                                         int32_t codes[8]) {
  if (w.bits == 8) {
    for (int j = 0; j < 8; ++j) codes[j] = static_cast<int8_t>((bits.word[j / 4] >> ((j % 4) * 8)) & 0xffu);
    return;
  }
  const uint32_t low = bits.word[0];
  uint32_t even = 0, odd = 0;  // high bits, placed at bit 4 of each code below
  if (w.bits == 5) {
    const uint32_t high = w.qh[static_cast<uint64_t>(n) * (w.k / 8) + (k0 / 32) * 4 + (k0 % 32) / 8];
    for (int j = 0; j < 4; ++j) {
      even |= ((high >> j) & 1u) << (8 * j);
      odd |= ((high >> (4 + j)) & 1u) << (8 * j);
    }
  } else if (w.bits == 6) {
    const uint8_t* planes = w.qh + static_cast<uint64_t>(n) * (w.k / 4) + (k0 / 32) * 8 + (k0 % 32) / 8;
    for (int j = 0; j < 4; ++j) {
      even |= ((planes[0] >> (2 * j)) & 3u) << (8 * j);
      odd |= ((planes[4] >> (2 * j)) & 3u) << (8 * j);
    }
  }
  for (int j = 0; j < 8; ++j) {
    const uint32_t high = ((j % 2 ? odd : even) >> (8 * (j / 2))) & 0xffu;
    codes[j] = static_cast<int32_t>(((low >> (4 * j)) & 0xfu) | (high << 4));
  }
}

PTB_HOST_DEVICE inline void plain_codes8(const PlainWeights& w, uint32_t n, uint32_t k0, int32_t codes[8]) {
  plain_codes8(w, n, k0, plain_low8(w, n, k0), codes);
}

// Weight (n, k) is scale * (code - zero), both per group of k.
struct PlainGroup {
  float scale = 0, zero = 0;
};

PTB_HOST_DEVICE inline PlainGroup plain_group(const PlainWeights& w, uint32_t n, uint32_t k) {
  const uint64_t group = static_cast<uint64_t>(n) * (w.k / w.group) + k / w.group;
  const uint64_t step = static_cast<uint64_t>(n) * (w.k / 256) + k / 256;
  PlainGroup g;
  if (w.bits == 8) {
    // Little-endian bytes, as the GPU and every host ptbundle runs on keep them.
    g.scale = bfloat16_bits_to_float(static_cast<uint16_t>(w.scale[group * 2] | (w.scale[group * 2 + 1] << 8)));
    g.zero = static_cast<float>(static_cast<int8_t>(w.zero[group]));
  } else if (w.bits == 6) {
    g.scale = static_cast<float>(static_cast<int8_t>(w.scale[group])) * half_bits_to_float(w.scale_step[step]);
    g.zero = 32.f;
  } else {
    g.scale = static_cast<float>(w.scale[group]) * half_bits_to_float(w.scale_step[step]);
    g.zero = static_cast<float>(w.zero[group]) * half_bits_to_float(w.zero_step[step]);
  }
  return g;
}

// Weights (n, k0) .. (n, k0 + 7) of group g, dequantized (a group is at
// least 8 weights, aligned, so all 8 share one).
PTB_HOST_DEVICE inline void plain_weights8(const PlainWeights& w, uint32_t n, uint32_t k0, const PlainLow& bits,
                                           const PlainGroup& g, float weights[8]) {
  int32_t codes[8];
  plain_codes8(w, n, k0, bits, codes);
  for (int j = 0; j < 8; ++j) weights[j] = g.scale * (static_cast<float>(codes[j]) - g.zero);
}

PTB_HOST_DEVICE inline void plain_weights8(const PlainWeights& w, uint32_t n, uint32_t k0, float weights[8]) {
  plain_weights8(w, n, k0, plain_low8(w, n, k0), plain_group(w, n, k0), weights);
}

}  // namespace ptb::builtin
