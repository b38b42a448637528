// What the .pte and .ptd writers share: both splice a header into a finished
// flatbuffer right after its file identifier, then lay segments out after it.
#pragma once

#include <cstdint>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb::detail {

// Little-endian appends, whatever the host.
void put_u32(std::vector<uint8_t>& out, uint32_t value);
void put_u64(std::vector<uint8_t>& out, uint64_t value);

// Writes `flatbuffer` with `header` (a multiple of the buffer's alignment)
// inserted after byte 8, adding header.size() to the root offset in bytes
// 0..3 so that the root table is still found. Every other offset in a
// flatbuffer is relative, and the shift keeps every table's alignment.
Status write_spliced(AtomicOutput& out, Bytes flatbuffer, Bytes header);

// Pads to `base` + each planned offset and writes each segment. Progress is
// reported as bytes of the whole file of `file_size`.
Status write_segments(AtomicOutput& out, const std::vector<SegmentSource>& segments,
                      const std::vector<uint64_t>& offsets, uint64_t base, uint64_t file_size,
                      const Progress& progress);

}  // namespace ptb::detail
