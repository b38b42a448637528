#include "elf_sections.h"

#include <algorithm>

#include "le_bytes.h"

namespace ptb::detail {
namespace {

// ELF64 field offsets (System V gABI, "ELF Header" and "Sections").
constexpr uint64_t kHeaderSize = 64;
constexpr uint64_t kSectionHeaderSize = 64;
constexpr uint64_t kProgramHeaderSize = 56;
constexpr uint16_t kNoSectionNames = 0;  // SHN_UNDEF
constexpr uint16_t kMaxSections = 0xff00;  // SHN_LORESERVE: more needs extended numbering

std::string at(const std::string& context, uint64_t offset) {
  return context + ": ELF at offset " + hex(offset);
}

}  // namespace

bool looks_like_elf64(Bytes data, uint64_t offset) {
  if (!range_fits(offset, kHeaderSize, data.size())) return false;
  const uint8_t* p = data.data() + offset;
  return p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2 /* ELFCLASS64 */ &&
         p[5] == 1 /* ELFDATA2LSB */;
}

Result<ElfHeader> read_elf64(Bytes data, uint64_t offset, const std::string& context) {
  if (!looks_like_elf64(data, offset))
    return invalid(at(context, offset) + ": not a 64-bit little-endian ELF header; expected \\x7fELF, class 2, data 1");
  ElfHeader header;
  header.abi_version = data[offset + 8];
  header.machine = load_le<uint16_t>(data, offset + 18);
  header.flags = load_le<uint32_t>(data, offset + 48);
  const uint64_t limit = data.size() - offset;  // bytes from the ELF's start to the end of data
  const auto program_offset = load_le<uint64_t>(data, offset + 32);
  const auto section_offset = load_le<uint64_t>(data, offset + 40);
  const auto program_entry_size = load_le<uint16_t>(data, offset + 54);
  const auto program_count = load_le<uint16_t>(data, offset + 56);
  const auto section_entry_size = load_le<uint16_t>(data, offset + 58);
  const auto section_count = load_le<uint16_t>(data, offset + 60);
  const auto names_index = load_le<uint16_t>(data, offset + 62);
  header.extent = kHeaderSize;

  if (program_count > 0) {
    if (program_entry_size != kProgramHeaderSize)
      return invalid(at(context, offset) + ": e_phentsize " + std::to_string(program_entry_size) + "; expected 56");
    const uint64_t table_size = uint64_t{program_count} * kProgramHeaderSize;
    if (!range_fits(program_offset, table_size, limit))
      return invalid(at(context, offset) + ": program headers at " + hex(program_offset) + " (" +
                     std::to_string(table_size) + " bytes) run past the end of the data (" +
                     std::to_string(limit) + " bytes from the ELF's start)");
    header.extent = std::max(header.extent, program_offset + table_size);
    for (uint16_t i = 0; i < program_count; ++i) {
      const uint64_t entry = offset + program_offset + uint64_t{i} * kProgramHeaderSize;
      ElfSegment segment;
      segment.type = load_le<uint32_t>(data, entry);
      segment.flags = load_le<uint32_t>(data, entry + 4);
      segment.vaddr = load_le<uint64_t>(data, entry + 16);
      segment.memsz = load_le<uint64_t>(data, entry + 40);
      header.segments.push_back(segment);
    }
  }
  if (section_count == 0) return header;
  if (section_entry_size != kSectionHeaderSize)
    return invalid(at(context, offset) + ": e_shentsize " + std::to_string(section_entry_size) + "; expected 64");
  if (section_count >= kMaxSections)
    return invalid(at(context, offset) + ": e_shnum " + std::to_string(section_count) + "; expected fewer than 65280");
  const uint64_t table_size = uint64_t{section_count} * kSectionHeaderSize;
  if (!range_fits(section_offset, table_size, limit))
    return invalid(at(context, offset) + ": section headers at " + hex(section_offset) + " (" +
                   std::to_string(table_size) + " bytes) run past the end of the data (" + std::to_string(limit) +
                   " bytes from the ELF's start)");
  header.extent = std::max(header.extent, section_offset + table_size);

  header.sections.resize(section_count);
  std::vector<uint32_t> name_offsets(section_count);
  for (uint16_t i = 0; i < section_count; ++i) {
    const uint64_t entry = offset + section_offset + uint64_t{i} * kSectionHeaderSize;
    ElfSection& section = header.sections[i];
    name_offsets[i] = load_le<uint32_t>(data, entry);
    section.type = load_le<uint32_t>(data, entry + 4);
    section.flags = load_le<uint64_t>(data, entry + 8);
    section.offset = load_le<uint64_t>(data, entry + 24);
    section.size = load_le<uint64_t>(data, entry + 32);
    if (section.type == kSectionNoBits || section.type == 0 /* SHT_NULL */) {
      section.size = 0;
      continue;
    }
    if (!range_fits(section.offset, section.size, limit))
      return invalid(at(context, offset) + ": section " + std::to_string(i) + " at " + hex(section.offset) +
                     " with size " + std::to_string(section.size) + " runs past the end of the data (" +
                     std::to_string(limit) + " bytes from the ELF's start)");
    header.extent = std::max(header.extent, section.offset + section.size);
  }
  if (names_index == kNoSectionNames) return header;
  if (names_index >= section_count)
    return invalid(at(context, offset) + ": e_shstrndx " + std::to_string(names_index) + " is not a section (" +
                   std::to_string(section_count) + " sections)");
  const ElfSection& names = header.sections[names_index];
  for (uint16_t i = 0; i < section_count; ++i) {
    if (name_offsets[i] >= names.size) continue;  // an unnamed or badly named section keeps ""
    const auto* begin = reinterpret_cast<const char*>(data.data() + offset + names.offset + name_offsets[i]);
    const uint64_t room = names.size - name_offsets[i];
    const auto* end = static_cast<const char*>(std::memchr(begin, '\0', room));
    header.sections[i].name.assign(begin, end ? end : begin + room);
  }
  return header;
}

}  // namespace ptb::detail
