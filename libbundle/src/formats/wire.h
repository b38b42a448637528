// Little helpers shared by the format readers: little-endian numbers at a
// checked place, magic strings shown safely in errors, and the bounds we give
// the FlatBuffers verifier. Private to libbundle.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ptbundle/base/file.h"
#include "ptbundle/base/text.h"

namespace ptb::detail {

// The caller has checked that `data` holds at least 4 (8) bytes at `offset`.
inline uint32_t u32le(Bytes data, size_t offset) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | data[offset + i];
  return value;
}

inline uint64_t u64le(Bytes data, size_t offset) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | data[offset + i];
  return value;
}

inline bool has_text_at(Bytes data, size_t offset, std::string_view text) {
  return data.size() >= offset && data.size() - offset >= text.size() &&
         std::memcmp(data.data() + offset, text.data(), text.size()) == 0;
}

// "ET12", or "\x00\x01.." for bytes that are not printable: file contents
// may be anything and end up in one line on a terminal.
std::string show_bytes(Bytes data);

// A name read from a file, for an error line: control bytes and backslashes
// escaped, other bytes kept so that UTF-8 names stay readable.
std::string show_text(std::string_view text);


// Verification work grows with the number of tables visited, and a crafted
// buffer can make many offsets point at the same table; bounding the count by
// what the buffer could honestly hold (a table takes at least 4 bytes) keeps
// the time linear in the file size.
inline flatbuffers::Verifier::Options verifier_options(size_t buffer_size) {
  flatbuffers::Verifier::Options options;
  options.max_depth = 64;
  options.max_tables = static_cast<flatbuffers::uoffset_t>(buffer_size / 4 + 64);
  options.check_alignment = true;
  return options;
}

// The verifier asserts on buffers of 2 GiB or more; callers refuse those first.
inline bool verifiable_size(uint64_t size) { return size < FLATBUFFERS_MAX_BUFFER_SIZE; }

}  // namespace ptb::detail
