// How a cubin names its target, learnt by compiling one kernel with nvcc 13.0
// for every -gencode target it knows (sm_75 … sm_121f) and reading the
// results with readelf, and checked against LLVM's ELF.h (EF_CUDA_*):
//
// - e_flags has two layouts, chosen by e_ident[EI_ABIVERSION]. Up to ABI 7
//   (CUDA ≤ 12.x) the SM number sits in the low byte and bit 0x800 marks an
//   architecture-specific target (EF_CUDA_ACCELERATORS_V1). From ABI 8
//   (ptxas 12.8+, all of CUDA 13) the SM number is in bits 8-15 and bit 0x8
//   is the accelerator flag: ptxas 13.0 writes 0x06005a04 for sm_90,
//   0x06006402 for sm_100, 0x06007802 for sm_120.
// - ptxas 13.0 does not set that flag for sm_90a/sm_100a/sm_120a: the
//   e_flags of sm_90 and sm_90a cubins are equal. What differs is the
//   `.nv.compat` section, attribute 9, 1 for the 'a' targets and 0 otherwise
//   (sm_100 and sm_100f are identical there), and the ptxas command line in
//   the `.note.nv.tkinfo` note ("-arch sm_90a", "-arch sm_100f"), which is
//   the only place the family suffix survives.
//
// `.nv.compat` records are laid out like `.nv.info` ones: a format byte, an
// attribute byte, then for format 4 a 16-bit length and that many bytes, for
// formats 1-3 a 16-bit value.
#include "cubin.h"

#include <cstring>
#include <string_view>

#include "elf_sections.h"
#include "le_bytes.h"

namespace ptb::detail {
namespace {

constexpr uint8_t kFirstAbiWithHighSm = 8;
constexpr uint32_t kAcceleratorsHighLayout = 0x8;
constexpr uint32_t kAcceleratorsLowLayout = 0x800;
constexpr uint8_t kCompatArchSpecific = 9;
constexpr uint8_t kRecordWithLength = 4;

bool compat_says_arch_specific(Bytes section) {
  uint64_t at = 0;
  while (range_fits(at, 4, section.size())) {
    const uint8_t format = section[at];
    const uint8_t attribute = section[at + 1];
    const auto value = load_le<uint16_t>(section, at + 2);
    if (format == 0) return false;  // the zero tail that pads the section
    if (format == kRecordWithLength) {
      at += 4 + uint64_t{value};
      continue;
    }
    if (format > kRecordWithLength) return false;  // a layout we do not know: say nothing
    if (attribute == kCompatArchSpecific) return (value & 0xff) == 1;
    at += 4;
  }
  return false;
}

// The suffix letter after "-arch sm_<digits>" in the ptxas command line
// that the tkinfo note records; 0 when absent.
char tkinfo_suffix(Bytes section) {
  const std::string_view text(reinterpret_cast<const char*>(section.data()), section.size());
  const std::string_view marker = "-arch sm_";
  const size_t found = text.find(marker);
  if (found == std::string_view::npos) return 0;
  size_t at = found + marker.size();
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  if (at < text.size() && (text[at] == 'a' || text[at] == 'f')) return text[at];
  return 0;
}

}  // namespace

bool looks_like_cubin(Bytes data, uint64_t offset) {
  return looks_like_elf64(data, offset) && load_le<uint16_t>(data, offset + 18) == kElfMachineCuda;
}

Result<CubinInfo> read_cubin(Bytes data, uint64_t offset, const std::string& context) {
  PTB_TRY(ElfHeader elf, read_elf64(data, offset, context));
  const std::string where = context + ": cubin at offset " + hex(offset);
  if (elf.machine != kElfMachineCuda)
    return invalid(where + ": e_machine " + std::to_string(elf.machine) + "; expected 190 (EM_CUDA)");
  CubinInfo info;
  info.size = elf.extent;
  bool accelerated = false;
  if (elf.abi_version >= kFirstAbiWithHighSm) {
    info.sm = (elf.flags >> 8) & 0xff;
    accelerated = (elf.flags & kAcceleratorsHighLayout) != 0;
  } else {
    info.sm = elf.flags & 0xff;
    accelerated = (elf.flags & kAcceleratorsLowLayout) != 0;
  }
  if (info.sm < 10)
    return invalid(where + ": e_flags " + hex(elf.flags) + " (ELF ABI version " + std::to_string(elf.abi_version) +
                   ") names SM " + std::to_string(info.sm) + "; expected an SM number such as 80 or 90");
  char suffix = 0;
  for (const ElfSection& section : elf.sections) {
    const Bytes bytes = data.subspan(offset + section.offset, section.size);
    if (section.name == ".nv.compat" && compat_says_arch_specific(bytes)) accelerated = true;
    if (section.name == ".note.nv.tkinfo") suffix = tkinfo_suffix(bytes);
    if (section.name.starts_with(".text.")) {
      ++info.code_sections;
      info.functions.push_back(section.name.substr(6));
    }
  }
  if (accelerated || suffix == 'a') info.variant = ArchVariant::ArchSpecific;
  else if (suffix == 'f') info.variant = ArchVariant::Family;
  return info;
}

}  // namespace ptb::detail
