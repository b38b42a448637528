// Where _convert_weight_to_int4pack (tinygemm's layout, [n/8, k/(tiles*16),
// 32, tiles/2] int32) keeps the 4 bits of weight (n, k): the word, and the
// bit the nibble starts at. int4.cu's dequantization reads by it; its
// direct kernel walks the same layout word by word, lane by lane, and the
// tests check the two agree.
#pragma once

#include <cstdint>

#include "host_device.h"

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

}  // namespace ptb::builtin
