#include "formats/wire.h"

#include <cstdio>

namespace ptb::detail {

std::string show_bytes(Bytes data) {
  std::string out;
  for (uint8_t byte : data) {
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out += static_cast<char>(byte);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  return out;
}

std::string show_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || byte == '\\') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

bool valid_utf8(Bytes data) {
  size_t i = 0;
  while (i < data.size()) {
    uint8_t lead = data[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t point = 0;
    uint32_t minimum = 0;
    if ((lead & 0xe0) == 0xc0) {
      length = 2, point = lead & 0x1f, minimum = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, point = lead & 0x0f, minimum = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, point = lead & 0x07, minimum = 0x10000;
    } else {
      return false;
    }
    if (data.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((data[i + k] & 0xc0) != 0x80) return false;
      point = (point << 6) | (data[i + k] & 0x3f);
    }
    if (point < minimum || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

}  // namespace ptb::detail
