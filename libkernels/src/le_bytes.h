// Little-endian fields of device-code containers, read only after the
// caller proved they lie inside the data (range_fits). memcpy keeps the reads
// legal at the odd offsets where AOTInductor embeds its images.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "ptbundle/base/file.h"

namespace ptb::detail {

template <class T>
T load_le(Bytes data, uint64_t offset) {
  T value;
  std::memcpy(&value, data.data() + offset, sizeof value);
  return value;  // every supported host is little-endian, as are these formats
}

inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace ptb::detail
