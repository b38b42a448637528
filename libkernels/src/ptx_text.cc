#include "ptx_text.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace ptb::detail {
namespace {

// The directives come before the first function; looking this far is enough
// and keeps a huge module from being read twice.
constexpr size_t kDirectiveWindow = 64 * 1024;

std::string_view text_of(Bytes data) {
  if (data.empty()) return {};
  size_t length = std::min(data.size(), kDirectiveWindow);
  if (const void* nul = std::memchr(data.data(), '\0', length))
    length = static_cast<size_t>(static_cast<const uint8_t*>(nul) - data.data());
  return {reinterpret_cast<const char*>(data.data()), length};
}

// Position just after the directive `name` at the start of a line (after
// blanks), or npos.
size_t after_directive(std::string_view text, std::string_view name) {
  size_t at = 0;
  while ((at = text.find(name, at)) != std::string_view::npos) {
    size_t before = at;
    while (before > 0 && (text[before - 1] == ' ' || text[before - 1] == '\t')) --before;
    const bool line_start = before == 0 || text[before - 1] == '\n' || text[before - 1] == '\r';
    const size_t end = at + name.size();
    if (line_start && end < text.size() && (text[end] == ' ' || text[end] == '\t')) return end;
    at = end;
  }
  return std::string_view::npos;
}

uint32_t read_number(std::string_view text, size_t& at) {
  uint32_t value = 0;
  int digits = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9' && digits < 6) {
    value = value * 10 + static_cast<uint32_t>(text[at] - '0');
    ++at;
    ++digits;
  }
  return value;
}

void skip_blanks(std::string_view text, size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
}

}  // namespace

PtxInfo read_ptx_directives(Bytes data) {
  const std::string_view text = text_of(data);
  PtxInfo info;
  size_t at = after_directive(text, ".version");
  if (at != std::string_view::npos) {
    skip_blanks(text, at);
    info.major = read_number(text, at);
    if (at < text.size() && text[at] == '.') {
      ++at;
      info.minor = read_number(text, at);
    }
  }
  at = after_directive(text, ".target");
  if (at != std::string_view::npos) {
    skip_blanks(text, at);
    if (text.substr(at, 3) == "sm_") {
      at += 3;
      info.sm = read_number(text, at);
      if (at < text.size() && text[at] == 'a') info.variant = ArchVariant::ArchSpecific;
      if (at < text.size() && text[at] == 'f') info.variant = ArchVariant::Family;
    }
  }
  return info;
}

bool looks_like_ptx(Bytes data) {
  const std::string_view text = text_of(data);
  for (char c : text.substr(0, 4096))
    if (static_cast<unsigned char>(c) < 0x09) return false;
  return after_directive(text, ".version") != std::string_view::npos &&
         after_directive(text, ".target") != std::string_view::npos;
}

}  // namespace ptb::detail
