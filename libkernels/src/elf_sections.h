// The section table of an ELF64 little-endian file, read with every offset
// and size checked against the bytes at hand. Used for host libraries (to
// find .nv_fatbin and the read-only data where kernels get embedded) and for
// CUDA ELF images (to find their notes and .nv.compat attributes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

inline constexpr uint16_t kElfMachineCuda = 190;  // EM_CUDA
inline constexpr uint32_t kSectionNoBits = 8;     // SHT_NOBITS
inline constexpr uint64_t kSectionExecutable = 0x4;  // SHF_EXECINSTR

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;  // from the ELF's first byte
  uint64_t size = 0;    // 0 for SHT_NOBITS: no bytes in the file
};

// A program header (segment): what the loader maps, and with which rights.
struct ElfSegment {
  uint32_t type = 0;   // PT_LOAD 1, PT_GNU_RELRO 0x6474e552
  uint32_t flags = 0;  // PF_X 1, PF_W 2, PF_R 4
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
};

struct ElfHeader {
  uint8_t abi_version = 0;  // e_ident[EI_ABIVERSION]
  uint16_t machine = 0;
  uint32_t flags = 0;
  // One past the last byte that the header, program headers, section headers
  // and sections cover: the extent of an ELF embedded in a larger blob.
  uint64_t extent = 0;
  std::vector<ElfSection> sections;
  std::vector<ElfSegment> segments;
};

// True when `data` at `offset` starts like an ELF64 little-endian file.
bool looks_like_elf64(Bytes data, uint64_t offset);

// Reads the ELF that starts at `offset` of `data`; it may not reach past
// `data`'s end. `context` prefixes errors; offsets in errors are `data`'s.
Result<ElfHeader> read_elf64(Bytes data, uint64_t offset, const std::string& context);

}  // namespace ptb::detail
