// Where _convert_weight_to_int4pack (tinygemm's layout, [n/8, k/(tiles*16),
// 32, tiles/2] int32) keeps the 4 bits of weight (n, k): the word, and the
// bit the nibble starts at; and the other way, which weight a nibble holds.
// int4.cu's dequantization reads a word at a time by int4_weight_at; its
// direct kernel walks the same layout lane by lane, and the tests check the
// three agree.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace ptb::builtin {

struct Int4Position {
  uint64_t word = 0;
  uint32_t shift = 0;
};

PTB_HOST_DEVICE inline Int4Position int4_position(uint32_t n, uint32_t k, uint32_t k_super, uint32_t inner_tiles) {
  const uint32_t tile = k / 16, outer = tile / inner_tiles, inner = tile % inner_tiles;
  const uint32_t lane_k = (k % 16) / 2;
  const uint32_t lane = (n % 8) * 4 + lane_k % 4;
  const uint32_t slot = (inner % 2) * 2 + (lane_k >= 4 ? 1 : 0);
  Int4Position at;
  at.word = ((static_cast<uint64_t>(n / 8) * k_super + outer) * 32 + lane) * (inner_tiles / 2) + inner / 2;
  at.shift = (k % 2) * 16 + slot * 4;
  return at;
}

// The weight the nibble at bit `shift` of word `word` holds.
struct Int4Weight {
  uint32_t n = 0, k = 0;
};

PTB_HOST_DEVICE inline Int4Weight int4_weight_at(uint64_t word, uint32_t shift, uint32_t k_super, uint32_t inner_tiles) {
  const uint32_t pairs = inner_tiles / 2;
  const uint32_t pair = static_cast<uint32_t>(word % pairs);
  const uint32_t lane = static_cast<uint32_t>((word / pairs) % 32);
  const uint64_t block = word / pairs / 32;  // n-block * k_super + outer
  const uint32_t outer = static_cast<uint32_t>(block % k_super), nb = static_cast<uint32_t>(block / k_super);
  const uint32_t parity = shift / 16, slot = (shift % 16) / 4;
  const uint32_t tile = 2 * pair + slot / 2, high = slot % 2;
  Int4Weight at;
  at.n = nb * 8 + lane / 4;
  at.k = (outer * inner_tiles + tile) * 16 + (lane % 4 + 4 * high) * 2 + parity;
  return at;
}

}  // namespace ptb::builtin
