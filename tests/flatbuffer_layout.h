// Building files the way ExecuTorch's serializers lay them out, for tests and
// benchmarks that make inputs no writer of ours would: little-endian stores,
// and a flatbuffer with an extended header spliced in after its identifier.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ptbundle/base/file.h"

namespace ptb::test {

inline void put_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

inline void put_u64(std::vector<uint8_t>& bytes, size_t offset, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

// A .ptd's "FH01" header (40 bytes, padded to 48), which ExecuTorch's
// serializer splices in after the flatbuffer's root offset and identifier.
inline std::vector<uint8_t> ptd_header(uint64_t flatbuffer_size, uint64_t segment_base_offset, uint64_t segment_data_size) {
  std::vector<uint8_t> header(48, 0);
  std::memcpy(header.data(), "FH01", 4);
  put_u32(header, 4, 40);
  put_u64(header, 8, 48);  // the flatbuffer's offset: after the padded header
  put_u64(header, 16, flatbuffer_size);
  put_u64(header, 24, segment_base_offset);
  put_u64(header, 32, segment_data_size);
  return header;
}

// The finished flatbuffer `flatbuffer` (`size` bytes) with `header` spliced
// in after its root offset and identifier, the root offset moved past it;
// then zeros up to `base` (at least size + header.size()) and `segments`.
inline std::vector<uint8_t> splice_flatbuffer(const uint8_t* flatbuffer, size_t size,
                                              const std::vector<uint8_t>& header, uint64_t base, Bytes segments) {
  // Sized once and filled with memcpy: GCC 12 at -O2 reports a false
  // -Warray-bounds for vector::insert after a short vector.
  std::vector<uint8_t> out(base + segments.size(), 0);
  std::memcpy(out.data(), flatbuffer, 8);
  uint32_t root = 0;
  for (int i = 3; i >= 0; --i) root = (root << 8) | flatbuffer[i];
  put_u32(out, 0, root + static_cast<uint32_t>(header.size()));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  std::memcpy(out.data() + 8 + header.size(), flatbuffer + 8, size - 8);
  if (!segments.empty()) std::memcpy(out.data() + base, segments.data(), segments.size());
  return out;
}

}  // namespace ptb::test
