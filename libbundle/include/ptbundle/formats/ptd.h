// Reading ExecuTorch data files (.ptd, FlatTensor): the "FH01" header spliced
// into the flatbuffer, segments, and named data with optional tensor layouts.
// open() verifies the flatbuffer and checks every segment and every entry
// against the file size; blob bytes are not read until asked for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/formats/key_index.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct PtdHeader {
  uint32_t length = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

struct PtdSegment {
  uint64_t offset = 0;       // relative to segment_base_offset
  uint64_t size = 0;
  uint64_t file_offset = 0;  // absolute, checked
};

struct TensorLayout {
  int8_t scalar_type = 0;
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
};

struct PtdEntry {
  std::string key;
  uint32_t segment_index = 0;
  uint64_t file_offset = 0;  // of the blob
  uint64_t size = 0;
  std::optional<TensorLayout> layout;
};

class PtdFile {
 public:
  static Result<PtdFile> open(const std::string& path);
  // A file already mapped (by a caller that read its kind from the mapping).
  static Result<PtdFile> parse(MappedFile file);
  // A file inside a bundle folder, opened with no symlink followed.
  static Result<PtdFile> open_in(const BundleDir& dir, const std::string& relative);

  const std::string& path() const { return file_.path(); }
  const MappedFile& file() const { return file_; }
  const PtdHeader& header() const { return header_; }
  uint32_t version() const { return version_; }
  const std::vector<PtdSegment>& segments() const { return segments_; }
  const std::vector<PtdEntry>& entries() const { return entries_; }
  const PtdEntry* find(std::string_view key) const;
  Bytes bytes(const PtdEntry& entry) const;

 private:
  MappedFile file_;
  PtdHeader header_;
  uint32_t version_ = 0;
  std::vector<PtdSegment> segments_;
  std::vector<PtdEntry> entries_;
  KeyIndex index_;
};

}  // namespace ptb
