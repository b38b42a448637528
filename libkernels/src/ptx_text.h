// A PTX module's own statement of what it is: `.version 9.0` (the PTX ISA
// the driver's JIT must understand) and `.target sm_90a` (the virtual
// architecture, written sm_XY in PTX and compute_XY by nvcc).
#pragma once

#include <cstdint>
#include <optional>

#include "ptbundle/base/file.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {

struct PtxInfo {
  uint32_t major = 0, minor = 0;  // .version; 0.0 when absent
  uint32_t sm = 0;                // .target; 0 when absent
  ArchVariant variant = ArchVariant::Plain;
};

// Reads the directives; bytes after a NUL are ignored (fatbin entries pad).
PtxInfo read_ptx_directives(Bytes text);

// True when `data` reads as PTX text: printable, with a `.version` and a
// `.target` directive near its start.
bool looks_like_ptx(Bytes data);

}  // namespace ptb::detail
