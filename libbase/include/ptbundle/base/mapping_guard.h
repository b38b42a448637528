// Mapped files that shrink while mapped (mapping_guard.cc says how): a read
// past the new end gives zeros instead of SIGBUS, and the file is remembered
// as changed, so that nothing computed from those zeros is written
// (AtomicOutput::commit) or reported (the CLI's Output).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ptbundle/base/file.h"

namespace ptb {

// MappedFile registers each mapping (by its first byte) and forgets it when
// unmapped. A full table (65,536 mappings at once) leaves a mapping unguarded.
void guard_mapping(const void* data, uint64_t size, const std::string& path);
void unguard_mapping(const void* data);

// An error naming `file` if it shrank since it was mapped (a read past its
// new end found zeros) or its size is no longer the mapped size.
Status check_unchanged(const MappedFile& file);

// The path of a mapped file (mapped now or already unmapped) that shrank
// while this process read it; nothing computed from it may be written or
// reported.
std::optional<std::string> changed_mapped_file();
// Tests only: forgets every change seen so far.
void forget_changed_mapped_files();
// "<path>: changed while being read ...; expected ...", an I/O error.
Error changed_while_read(const std::string& path);

// A point right after a file is mapped where a test may change the file, as
// `cp new old` does to a file being read. It does nothing unless a test
// program installed a hook (base/test_seams.h); the shipped binaries install none.
void test_shrink_point(const std::string& path);

}  // namespace ptb
