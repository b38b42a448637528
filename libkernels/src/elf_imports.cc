#include "ptbundle/kernels/elf_imports.h"

#include <cstring>

#include "elf_sections.h"
#include "le_bytes.h"

namespace ptb {
namespace {

using detail::hex;
using detail::load_le;

// System V gABI and the x86-64 / AArch64 psABIs.
constexpr uint64_t kRelaSize = 24;    // Elf64_Rela
constexpr uint64_t kSymbolSize = 24;  // Elf64_Sym
constexpr uint16_t kMachineX86_64 = 62;
constexpr uint16_t kMachineAArch64 = 183;
constexpr uint32_t kSegmentRelro = 0x6474e552;

bool binds_a_slot(uint16_t machine, uint32_t type) {
  if (machine == kMachineX86_64) return type == 6 /* GLOB_DAT */ || type == 7 /* JUMP_SLOT */;
  return type == 1025 /* GLOB_DAT */ || type == 1026 /* JUMP_SLOT */;
}

const detail::ElfSection* section_named(const detail::ElfHeader& header, const char* name) {
  for (const auto& section : header.sections)
    if (section.name == name) return &section;
  return nullptr;
}

}  // namespace

Result<std::vector<ImportSlot>> find_import_slots(Bytes elf, const std::string& symbol, const std::string& context) {
  PTB_TRY(detail::ElfHeader header, detail::read_elf64(elf, 0, context));
  if (header.machine != kMachineX86_64 && header.machine != kMachineAArch64) {
    return invalid(context + ": ELF machine " + std::to_string(header.machine) +
                   "; expected a host library (x86-64 62 or AArch64 183)");
  }
  const detail::ElfSection* symbols = section_named(header, ".dynsym");
  const detail::ElfSection* names = section_named(header, ".dynstr");
  if (!symbols || !names) return invalid(context + ": no .dynsym and .dynstr sections; expected a shared library");

  std::vector<ImportSlot> slots;
  for (const char* table_name : {".rela.plt", ".rela.dyn"}) {
    const detail::ElfSection* table = section_named(header, table_name);
    if (!table) continue;
    if (table->size % kRelaSize != 0) {
      return invalid(context + ": " + table_name + " at " + hex(table->offset) + " holds " +
                     std::to_string(table->size) + " bytes; expected a multiple of 24 (Elf64_Rela)");
    }
    for (uint64_t at = table->offset; at < table->offset + table->size; at += kRelaSize) {
      const auto slot = load_le<uint64_t>(elf, at);
      const auto info = load_le<uint64_t>(elf, at + 8);
      if (!binds_a_slot(header.machine, static_cast<uint32_t>(info))) continue;
      const uint64_t index = info >> 32;
      if (index == 0) continue;
      if (index >= symbols->size / kSymbolSize) {
        return invalid(context + ": " + table_name + " entry at " + hex(at) + " names symbol " +
                       std::to_string(index) + "; .dynsym holds " + std::to_string(symbols->size / kSymbolSize));
      }
      const auto name_offset = load_le<uint32_t>(elf, symbols->offset + index * kSymbolSize);
      if (name_offset >= names->size) {
        return invalid(context + ": .dynsym symbol " + std::to_string(index) + " names offset " +
                       std::to_string(name_offset) + " past .dynstr (" + std::to_string(names->size) + " bytes)");
      }
      const auto* name = reinterpret_cast<const char*>(elf.data() + names->offset + name_offset);
      const uint64_t room = names->size - name_offset;
      if (symbol.size() >= room || std::memcmp(name, symbol.c_str(), symbol.size() + 1) != 0) continue;
      ImportSlot found;
      found.vaddr = slot;
      for (const auto& segment : header.segments)
        if (segment.type == kSegmentRelro && slot >= segment.vaddr && slot - segment.vaddr < segment.memsz)
          found.read_only = true;
      slots.push_back(found);
    }
  }
  return slots;
}

}  // namespace ptb
