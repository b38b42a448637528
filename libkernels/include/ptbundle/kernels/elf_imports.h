// Where a shared library keeps the address of a function it imports: the
// GOT slots that its JUMP_SLOT and GLOB_DAT relocations against the symbol
// fill in when the loader binds it. Read from the library's file bytes (its
// section table, .rela.plt/.rela.dyn and .dynsym), so it needs no loader
// internals; the runner adds the load bias to find them in memory.
#pragma once

#include <cstdint>
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
