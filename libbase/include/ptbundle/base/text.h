// How messages and reports write values, so that every command words them
// alike: a name from a file in quotes, a list, the sizes of a tensor.
// Header-only: the runtime modules use it without linking libbase.
#pragma once

#include <string>
#include <string_view>

#include "ptbundle/base/result.h"  // clipped

namespace ptb {

// 'text': a name read from a file, made printable and clipped (past `limit`
// bytes), so that a hostile name cannot flood or garble a message.
inline std::string in_quotes(std::string_view text, size_t limit = 200) { return "'" + clipped(text, limit) + "'"; }

// The items (anything std::string can be built from) with `separator` between.
template <typename Items>
std::string join(const Items& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

// "[1, 3, 224, 224]": the sizes of a tensor, of any integer type.
template <typename Sizes>
std::string shape_text(const Sizes& sizes) {
  std::string out = "[";
  bool first = true;
  for (const auto& size : sizes) {
    if (!first) out += ", ";
    out += std::to_string(size);
    first = false;
  }
  return out + "]";
}

// Well-formed UTF-8: no overlong forms, surrogates or code points past
// U+10FFFF (what Python, protobuf and JSON readers accept).
inline bool is_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    if (c < 0x80) extra = 0;
    else if (c >= 0xc2 && c <= 0xdf) extra = 1;
    else if (c >= 0xe0 && c <= 0xef) extra = 2;
    else if (c >= 0xf0 && c <= 0xf4) extra = 3;
    else return false;  // a continuation byte first, or an overlong two-byte lead
    if (text.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 2) return false;
    }
    // Overlong three- and four-byte forms, surrogates and code points past U+10FFFF.
    const unsigned char d = extra ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (extra == 2 && ((c == 0xe0 && d < 0xa0) || (c == 0xed && d >= 0xa0))) return false;
    if (extra == 3 && ((c == 0xf0 && d < 0x90) || (c == 0xf4 && d >= 0x90))) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace ptb
