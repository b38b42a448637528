// Where a shared library keeps the address of a function it imports: the
// GOT slots that its JUMP_SLOT and GLOB_DAT relocations against the symbol
// fill in when the loader binds it. Read from the library's file bytes (its
// section table, .rela.plt/.rela.dyn and .dynsym), so it needs no loader
// internals; the runner adds the load bias to find them in memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct ImportSlot {
  uint64_t vaddr = 0;       // the slot's address before the load bias is added
  bool read_only = false;   // inside PT_GNU_RELRO: made read-only once relocated
};

// Every slot of `symbol` in the ELF64 x86-64 or AArch64 shared library
// `elf`; empty when the library does not import it. `context` names the
// bytes in errors.
Result<std::vector<ImportSlot>> find_import_slots(Bytes elf, const std::string& symbol, const std::string& context);

}  // namespace ptb

namespace ptb {

// What a shared library asks of the process that loads it, from its dynamic
// section and dynamic symbol table: read before dlopen, so that a library the
// runtime cannot serve is refused with every missing name at once rather
// than by the loader with the first one.
struct ElfDynamicSymbols {
  std::vector<std::string> needed;     // DT_NEEDED: "libcuda.so.1", "libtorch.so", ...
  std::vector<std::string> undefined;  // global or weak symbols it imports, sorted, unique
  std::vector<std::string> defined;    // global or weak symbols it exports, sorted, unique
  bool imports(const std::string& name) const;
};

// Reads `elf` (an ELF64 little-endian shared object of any machine) through
// its section table (.dynamic, .dynsym and the string tables they link to).
// `context` names the bytes in errors.
Result<ElfDynamicSymbols> read_dynamic_symbols(Bytes elf, const std::string& context);

// Where an AOTInductor library compiled with package_constants_in_so=True
// (PyTorch's default) keeps its constants: the bytes from the symbol
// _binary_constants_bin_start to _binary_constants_bin_end, which its model
// constructor copies to the GPU, as a range of the file; nullopt when the
// library defines neither symbol. An error when the symbols or their section
// do not describe a range inside the file.
struct ElfFileRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};
Result<std::optional<ElfFileRange>> find_aoti_constants(Bytes elf, const std::string& context);

// The DT_NEEDED entries that make a library need LibTorch (libtorch*.so,
// libc10*.so): what aot_inductor.link_libtorch=True links; empty for a
// link_libtorch=False library, which the built-in runtime can serve.
std::vector<std::string> libtorch_dependencies(const ElfDynamicSymbols& symbols);

}  // namespace ptb
