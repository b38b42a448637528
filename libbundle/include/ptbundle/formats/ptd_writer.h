// Writing ExecuTorch data files (.ptd, FlatTensor) in the layout of
// extension/flat_tensor/serialize/serialize.py: the FlatTensor flatbuffer with
// the "FH01" header (magic, u32 length 40, u64 flatbuffer_offset, u64
// flatbuffer_size, u64 segment_base_offset, u64 segment_data_size) spliced in
// after the file identifier and padded to 16 bytes, zero padding to the
// segment base (a multiple of the segment alignment), then the segments.
//
// Entries name segments by index, so several keys may share one segment and
// the segments may come from several input files (a merge), each copied by
// the kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/base/result.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb {

struct PtdNamedEntry {
  std::string key;
  uint32_t segment_index = 0;
  std::optional<TensorLayout> layout;  // absent for opaque blobs
};

struct PtdContents {
  std::vector<SegmentSource> segments;
  std::vector<PtdNamedEntry> entries;

  // Appends a segment with `data` and one entry `key` naming it; returns the
  // segment index.
  uint32_t add(std::string key, SegmentSource data, std::optional<TensorLayout> layout = std::nullopt);
};

struct PtdWriteOptions {
  uint64_t segment_alignment = 128;  // FlatTensorConfig's default
};

struct PtdWriteLayout {
  PtdHeader header;
  uint64_t file_size = 0;
  std::vector<uint64_t> segment_offsets;  // relative to the segment base
};

// Checks keys (non-empty, unique) and segment indices, then writes to `out`
// (not committed). `progress` receives bytes written of the whole file.
Result<PtdWriteLayout> write_ptd(AtomicOutput& out, const PtdContents& contents,
                                 const PtdWriteOptions& options = {}, const Progress& progress = {});

Result<PtdWriteLayout> write_ptd_file(const std::string& path, const PtdContents& contents,
                                      const PtdWriteOptions& options = {});

}  // namespace ptb
