// Base64 for the DSSE envelope's payload and signature.
#include <array>

#include "ptbundle/signing/model_signature.h"

namespace ptb {

std::string base64_encode(Bytes data) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (uint32_t(data[i]) << 16) | (uint32_t(data[i + 1]) << 8) | data[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == data.size()) {
    const uint32_t v = uint32_t(data[i]) << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == data.size()) {
    const uint32_t v = (uint32_t(data[i]) << 16) | (uint32_t(data[i + 1]) << 8);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

Result<std::vector<uint8_t>> base64_decode(std::string_view text, const std::string& where) {
  std::array<int8_t, 256> value{};
  value.fill(-1);
  for (int c = 0; c < 26; ++c) {
    value['A' + c] = static_cast<int8_t>(c);
    value['a' + c] = static_cast<int8_t>(26 + c);
  }
  for (int c = 0; c < 10; ++c) value['0' + c] = static_cast<int8_t>(52 + c);
  value['+'] = value['-'] = 62;
  value['/'] = value['_'] = 63;

  size_t end = text.size();
  size_t padding = 0;
  while (end > 0 && text[end - 1] == '=' && padding < 2) {
    --end;
    ++padding;
  }
  if (padding && text.size() % 4 != 0)
    return invalid(where + ": invalid base64: padding on a length that is not a multiple of 4");
  if (end % 4 == 1) return invalid(where + ": invalid base64: " + std::to_string(end) + " characters cannot encode whole bytes");
  std::vector<uint8_t> out;
  out.reserve(end / 4 * 3 + 2);
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < end; ++i) {
    const int8_t v = value[static_cast<unsigned char>(text[i])];
    if (v < 0) return invalid(where + ": invalid base64 at character " + std::to_string(i) + "; expected A-Z, a-z, 0-9, '+', '/'");
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(buffer >> bits));
    }
  }
  // The bits left over must be zero, or two texts would decode to the same bytes.
  if (bits > 0 && (buffer & ((1u << bits) - 1)) != 0)
    return invalid(where + ": invalid base64: the last character has bits set that encode nothing");
  return out;
}

}  // namespace ptb
