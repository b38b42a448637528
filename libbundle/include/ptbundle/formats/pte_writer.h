// Writing ExecuTorch programs (.pte) in the layout ExecuTorch's serializer
// (exir/_serialize/_program.py) produces: the Program flatbuffer with the
// "eh00" extended header spliced in after the file identifier, zero padding
// to the segment base offset, then each segment at an offset aligned to
// lcm(segment_alignment, the segment's own alignment). Without segments the
// file is the bare flatbuffer, as ExecuTorch writes it.
//
// The program's `segments` table is computed here from the sizes of the
// segment sources; every other field (delegate references, named data,
// constant_segment) must already use indices into the `segments` list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptbundle/fb/program_generated.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb {

struct PteWriteOptions {
  uint64_t segment_alignment = 128;  // ExecuTorch's serialize_pte_binary default
};

struct PteWriteLayout {
  uint32_t header_length = 0;        // bytes spliced in (32: "eh00" + 28), 0 without segments
  uint64_t program_size = 0;         // flatbuffer bytes, extended header included
  uint64_t segment_base_offset = 0;  // 0 without segments
  uint64_t segment_data_size = 0;    // from the base to the end of the last segment
  uint64_t file_size = 0;
  std::vector<uint64_t> segment_offsets;  // relative to the base, as stored in the program
};

// The offsets ExecuTorch gives `segments` (relative to the segment base) and
// the total size of the segment data. Pure arithmetic; the writers and any
// caller planning a layout share it.
struct SegmentPlan {
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
};
SegmentPlan plan_segments(const std::vector<SegmentSource>& segments, uint64_t segment_alignment);

// Replaces program.segments with the planned offsets and writes the file to
// `out` (not committed: the caller commits once every file of its job is
// written). `progress` receives bytes written of the whole file.
Result<PteWriteLayout> write_pte(AtomicOutput& out, fb::ProgramT& program,
                                 const std::vector<SegmentSource>& segments,
                                 const PteWriteOptions& options = {}, const Progress& progress = {});

// The same, into `path`, committed.
Result<PteWriteLayout> write_pte_file(const std::string& path, fb::ProgramT& program,
                                      const std::vector<SegmentSource>& segments,
                                      const PteWriteOptions& options = {});

}  // namespace ptb
