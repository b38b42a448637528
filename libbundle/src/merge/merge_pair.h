// `merge -o m.pte --output-data m.ptd` commits two files, and no rename
// makes two files change at once. Before the renames a journal beside the
// program records the program's finished temporary file; the next merge to
// that program finishes the renames a SIGKILL or a power cut interrupted,
// and verify names the journal instead of failing on mismatched keys.
#pragma once

#include <optional>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::detail {

// ".<program name>.ptbundle-pair", in the program's folder.
std::string pair_journal_path(const std::string& output_pte);

// Written (and on disk) before the first rename: `pte_temp` is the name in
// the program's folder of its finished temporary file.
Status write_pair_journal(const std::string& output_pte, const std::string& pte_temp, const std::string& output_ptd);
// Removed after the second.
void remove_pair_journal(const std::string& output_pte);

// The data file an interrupted merge already put in place beside
// `output_pte`, when a journal says one did; nullopt when there is none.
Result<std::optional<std::string>> interrupted_pair(const std::string& output_pte);

// Finishes what a journal beside `output_pte` records: the program's
// temporary file renamed into place if it is still there, then the journal
// removed. Returns what was done ("" when there was no journal).
Result<std::string> finish_interrupted_pair(const std::string& output_pte);

}  // namespace ptb::detail
