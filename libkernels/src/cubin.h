// A CUDA ELF image (a cubin): its SM target from the ELF header flags, and
// whether it was built for one exact GPU (sm_90a) or for a family (sm_100f).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

struct CubinInfo {
  uint32_t sm = 0;
  ArchVariant variant = ArchVariant::Plain;
  uint64_t size = 0;  // bytes from the ELF header to the end of its last part
  int code_sections = 0;
  std::vector<std::string> functions;  // from the .text.<function> sections, in order
};

// True when `data` at `offset` starts an ELF64 with e_machine EM_CUDA.
bool looks_like_cubin(Bytes data, uint64_t offset);

// Reads the cubin at `offset`; it may not reach past `data`'s end.
Result<CubinInfo> read_cubin(Bytes data, uint64_t offset, const std::string& context);

}  // namespace ptb::detail
