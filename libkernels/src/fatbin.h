// The fatbin container nvcc writes into `.nv_fatbin` and `cuModuleLoadData`
// accepts: a 16-byte header and entries, each a header and one cubin or PTX
// module, possibly compressed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

// True when `data` at `offset` starts with a fatbin header we can read:
// magic, version 1, header size 16.
bool looks_like_fatbin(Bytes data, uint64_t offset);

// Reads the container at `offset`, which may not reach past `data`'s end,
// appends one image per PTX or cubin entry to `images` (their `location`
// starts with `where`), and returns the container's size.
Result<uint64_t> read_fatbin(Bytes data, uint64_t offset, const std::string& context, const std::string& where,
                             std::vector<KernelImage>& images);

}  // namespace ptb::detail
