#include <algorithm>
#include <cstring>

#include "elf_sections.h"
#include "le_bytes.h"
#include "ptbundle/kernels/elf_imports.h"

namespace ptb {
namespace {

using detail::hex;
using detail::load_le;

// System V gABI: section types, Elf64_Dyn, Elf64_Sym.
constexpr uint32_t kSectionDynamic = 6;   // SHT_DYNAMIC
constexpr uint32_t kSectionDynsym = 11;   // SHT_DYNSYM
constexpr uint64_t kDynSize = 16;
constexpr uint64_t kSymbolSize = 24;
constexpr int64_t kTagNull = 0;
constexpr int64_t kTagNeeded = 1;
constexpr uint16_t kSectionUndefined = 0;  // SHN_UNDEF
constexpr uint8_t kBindGlobal = 1, kBindWeak = 2;

// The section the sh_link field of section `index` names: its string table.
// The link is read here because ElfSection does not keep it.
Result<const detail::ElfSection*> linked_strings(Bytes elf, const detail::ElfHeader& header, size_t index,
                                                  const std::string& context) {
  const uint64_t section_headers = load_le<uint64_t>(elf, 40);
  const uint32_t link = load_le<uint32_t>(elf, section_headers + index * 64 + 40);
  if (link == 0 || link >= header.sections.size() || header.sections[link].size == 0) {
    return invalid(context + ": section " + header.sections[index].name + " links to section " +
                   std::to_string(link) + "; expected its string table");
  }
  return &header.sections[link];
}

// The NUL-terminated name at `offset` of `strings`, or an error.
Result<std::string> string_at(Bytes elf, const detail::ElfSection& strings, uint64_t offset, const std::string& what) {
  if (offset >= strings.size) {
    return invalid(what + " names offset " + std::to_string(offset) + " past its string table (" +
                   std::to_string(strings.size) + " bytes at " + hex(strings.offset) + ")");
  }
  const auto* begin = reinterpret_cast<const char*>(elf.data() + strings.offset + offset);
  const auto* end = static_cast<const char*>(std::memchr(begin, '\0', strings.size - offset));
  if (!end) return invalid(what + ": the name at offset " + std::to_string(offset) + " has no terminating NUL");
  return std::string(begin, end);
}

void sort_unique(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

}  // namespace

bool ElfDynamicSymbols::imports(const std::string& name) const {
  return std::binary_search(undefined.begin(), undefined.end(), name);
}

Result<ElfDynamicSymbols> read_dynamic_symbols(Bytes elf, const std::string& context) {
  PTB_TRY(detail::ElfHeader header, detail::read_elf64(elf, 0, context));
  ElfDynamicSymbols out;
  bool have_symbols = false;
  for (size_t i = 0; i < header.sections.size(); ++i) {
    const detail::ElfSection& section = header.sections[i];
    if (section.type == kSectionDynamic) {
      if (section.size % kDynSize != 0) {
        return invalid(context + ": .dynamic at " + hex(section.offset) + " holds " + std::to_string(section.size) +
                       " bytes; expected a multiple of 16 (Elf64_Dyn)");
      }
      PTB_TRY(const detail::ElfSection* strings, linked_strings(elf, header, i, context));
      for (uint64_t at = section.offset; at < section.offset + section.size; at += kDynSize) {
        const auto tag = load_le<int64_t>(elf, at);
        if (tag == kTagNull) break;
        if (tag != kTagNeeded) continue;
        PTB_TRY(std::string name, string_at(elf, *strings, load_le<uint64_t>(elf, at + 8),
                                            context + ": DT_NEEDED at " + hex(at)));
        out.needed.push_back(std::move(name));
      }
    } else if (section.type == kSectionDynsym) {
      if (section.size % kSymbolSize != 0) {
        return invalid(context + ": .dynsym at " + hex(section.offset) + " holds " + std::to_string(section.size) +
                       " bytes; expected a multiple of 24 (Elf64_Sym)");
      }
      have_symbols = true;
      PTB_TRY(const detail::ElfSection* strings, linked_strings(elf, header, i, context));
      // Entry 0 is the reserved null symbol.
      for (uint64_t at = section.offset + kSymbolSize; at < section.offset + section.size; at += kSymbolSize) {
        const uint8_t binding = elf[at + 4] >> 4;
        if (binding != kBindGlobal && binding != kBindWeak) continue;
        PTB_TRY(std::string name, string_at(elf, *strings, load_le<uint32_t>(elf, at),
                                            context + ": .dynsym entry at " + hex(at)));
        if (name.empty()) continue;
        const bool undefined = load_le<uint16_t>(elf, at + 6) == kSectionUndefined;
        (undefined ? out.undefined : out.defined).push_back(std::move(name));
      }
    }
  }
  if (!have_symbols) return invalid(context + ": no .dynsym section; expected a shared library");
  sort_unique(out.undefined);
  sort_unique(out.defined);
  return out;
}

std::vector<std::string> libtorch_dependencies(const ElfDynamicSymbols& symbols) {
  std::vector<std::string> found;
  for (const std::string& needed : symbols.needed)
    if (needed.starts_with("libtorch") || needed.starts_with("libc10")) found.push_back(needed);
  return found;
}

Result<std::optional<ElfFileRange>> find_aoti_constants(Bytes elf, const std::string& context) {
  PTB_TRY(detail::ElfHeader header, detail::read_elf64(elf, 0, context));
  const uint64_t section_headers = load_le<uint64_t>(elf, 40);
  struct Found {
    uint64_t value = 0;
    uint16_t section = 0;
    bool seen = false;
  } start, end;
  for (size_t i = 0; i < header.sections.size(); ++i) {
    const detail::ElfSection& section = header.sections[i];
    if (section.type != kSectionDynsym || section.size % kSymbolSize != 0) continue;
    PTB_TRY(const detail::ElfSection* strings, linked_strings(elf, header, i, context));
    for (uint64_t at = section.offset + kSymbolSize; at < section.offset + section.size; at += kSymbolSize) {
      PTB_TRY(std::string name, string_at(elf, *strings, load_le<uint32_t>(elf, at),
                                          context + ": .dynsym entry at " + hex(at)));
      Found* which = name == "_binary_constants_bin_start" ? &start : name == "_binary_constants_bin_end" ? &end : nullptr;
      if (!which) continue;
      *which = {load_le<uint64_t>(elf, at + 8), load_le<uint16_t>(elf, at + 6), true};
    }
  }
  if (!start.seen && !end.seen) return std::optional<ElfFileRange>();
  const std::string what = context + ": the constants section (_binary_constants_bin_start to _end)";
  if (!start.seen || !end.seen || start.section != end.section || start.section == 0 ||
      start.section >= header.sections.size() || end.value < start.value) {
    return invalid(what + " is not one range of one section; expected both symbols in the section that holds the "
                          "constants, the end after the start");
  }
  const detail::ElfSection& section = header.sections[start.section];
  const uint64_t address = load_le<uint64_t>(elf, section_headers + start.section * 64 + 16);  // sh_addr
  if (section.type == detail::kSectionNoBits || start.value < address || end.value - address > section.size) {
    return invalid(what + " at " + hex(start.value) + " to " + hex(end.value) + " lies outside section " +
                   section.name + " (" + hex(address) + ", " + std::to_string(section.size) +
                   " bytes in the file); expected it inside");
  }
  return std::optional<ElfFileRange>(ElfFileRange{section.offset + (start.value - address), end.value - start.value});
}

}  // namespace ptb

