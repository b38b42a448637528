// Bytes to be placed in an output file, wherever they live now: in memory the
// caller keeps alive, or in a range of a mapped input file. The writers of
// .pte and .ptd files take segments in this form so that a 4 GiB blob from an
// input file is copied by the kernel (copy_file_range) and never read into
// memory, and so that one output can gather blobs from several input files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct SegmentSource {
  // Not owned: the caller keeps the bytes, or the mapped file, alive until
  // the write returns.
  static SegmentSource memory(Bytes bytes, uint64_t alignment = 1);
  // [offset, offset + size) of `file`, checked against its size by the writer.
  static SegmentSource file_range(const MappedFile& file, uint64_t offset, uint64_t size,
                                  uint64_t alignment = 1);

  Bytes bytes;                       // when file == nullptr
  const MappedFile* file = nullptr;  // else this range of it
  uint64_t offset = 0;
  uint64_t size = 0;
  // Alignment this segment needs beyond the writer's segment alignment
  // (ExecuTorch aligns each segment to lcm(segment_alignment, alignment)).
  uint64_t alignment = 1;

  // Appends the bytes to `out`: memory by write(), a file range through
  // AtomicOutput::copy_from in slices, reporting progress between slices
  // (bytes of this segment, "writing " and the output's path).
  Status write_to(AtomicOutput& out, const Progress& progress = {}) const;
};

// The smallest multiple of `alignment` (a power of two or any positive
// number) that is >= value.
uint64_t align_up(uint64_t value, uint64_t alignment);
uint64_t lcm_alignment(uint64_t a, uint64_t b);

// Writes `count` zero bytes so that `out` reaches position `target`; an error
// if it is already past it (a layout bug, not an input error).
Status pad_to(AtomicOutput& out, uint64_t target);

}  // namespace ptb
