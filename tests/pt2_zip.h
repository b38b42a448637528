// Packages for tests made from the real mlp_et.pt2 (AOTInductor's own
// output): its entries read with libzip, changed where a test needs, and
// written back as a zip, so the reader under test sees PyTorch's bytes
// everywhere the test does not say otherwise.
#pragma once

#include <zip.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support.h"

namespace ptb::test {

// A zip written with libzip from entries given as (name, bytes or a count of
// zeros); `stored` entries are not compressed (so their bytes can be damaged).
struct ZipEntry {
  std::string name;
  std::string bytes;
  uint64_t zeros = 0;  // this many zero bytes after `bytes`, generated while written
  bool stored = false;
  int32_t method = -1;  // a ZIP_CM_* method instead of stored or deflate
};

// `prefix`, then zeros up to `size` bytes in all.
struct ZeroSource {
  uint64_t size = 0;
  uint64_t at = 0;
  std::string prefix;
};

inline zip_int64_t zero_callback(void* state, void* data, zip_uint64_t length, zip_source_cmd_t cmd) {
  auto* source = static_cast<ZeroSource*>(state);
  switch (cmd) {
    case ZIP_SOURCE_OPEN: source->at = 0; return 0;
    case ZIP_SOURCE_READ: {
      uint64_t n = std::min<uint64_t>(length, source->size - source->at);
      std::memset(data, 0, n);
      if (source->at < source->prefix.size()) {
        uint64_t k = std::min<uint64_t>(n, source->prefix.size() - source->at);
        std::memcpy(data, source->prefix.data() + source->at, k);
      }
      source->at += n;
      return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_STAT: {
      auto* st = static_cast<zip_stat_t*>(data);
      zip_stat_init(st);
      st->size = source->size;
      st->valid |= ZIP_STAT_SIZE;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR: return 0;
    case ZIP_SOURCE_FREE: delete source; return 0;
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default: return -1;
  }
}

inline void write_zip(const fs::path& path, const std::vector<ZipEntry>& entries) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  REQUIRE(zip);
  for (const auto& entry : entries) {
    zip_source_t* source = nullptr;
    if (entry.zeros) {
      source = zip_source_function(zip, zero_callback, new ZeroSource{entry.bytes.size() + entry.zeros, 0, entry.bytes});
    } else if (entry.bytes.empty()) {
      source = zip_source_buffer(zip, nullptr, 0, 0);  // libzip does not free a 0-byte buffer it is given
    } else {
      char* copy = static_cast<char*>(std::malloc(entry.bytes.size()));
      std::memcpy(copy, entry.bytes.data(), entry.bytes.size());
      source = zip_source_buffer(zip, copy, entry.bytes.size(), 1);
    }
    REQUIRE(source);
    zip_int64_t index = zip_file_add(zip, entry.name.c_str(), source, ZIP_FL_ENC_UTF_8);
    REQUIRE(index >= 0);
    const int32_t method = entry.method >= 0 ? entry.method : entry.stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE;
    REQUIRE(zip_set_file_compression(zip, static_cast<zip_uint64_t>(index), method, 1) == 0);
  }
  REQUIRE(zip_close(zip) == 0);
}

// The entries of a real package, as they are.
inline std::vector<ZipEntry> zip_entries(const fs::path& package) {
  std::vector<ZipEntry> out;
  int error = 0;
  zip_t* zip = zip_open(package.c_str(), ZIP_RDONLY, &error);
  REQUIRE(zip);
  for (zip_int64_t i = 0; i < zip_get_num_entries(zip, 0); ++i) {
    zip_stat_t st;
    zip_stat_index(zip, static_cast<zip_uint64_t>(i), 0, &st);
    std::string bytes(st.size, '\0');
    zip_file_t* file = zip_fopen_index(zip, static_cast<zip_uint64_t>(i), 0);
    REQUIRE(zip_fread(file, bytes.data(), st.size) == static_cast<zip_int64_t>(st.size));
    zip_fclose(file);
    out.push_back({st.name, std::move(bytes)});
  }
  zip_discard(zip);
  return out;
}

// The entries of the real mlp_et.pt2.
inline std::vector<ZipEntry> mlp_entries() { return zip_entries(ptb::test::fixture("aoti/mlp_et.pt2")); }

inline ZipEntry* entry_ending(std::vector<ZipEntry>& entries, const std::string& suffix) {
  for (auto& entry : entries)
    if (entry.name.ends_with(suffix)) return &entry;
  FAIL("no entry ending " << suffix);
  return nullptr;
}

}  // namespace ptb::test
