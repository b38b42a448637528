// `merge -o m.pte --output-data m.ptd` commits two files, and no rename
// makes two files change at once. Before the renames a journal beside the
// program records both finished temporary files by name and by identity
// (device, inode and size, which a rename keeps). What the journal proves
// is all that is ever completed: the data file in place is the new one
// (its identity is the journal's) and the program's temporary file is still
// there, then the program is renamed after it; the data file was not
// renamed, then the old pair stands and the temporary files are removed;
// both renames done, then only the journal goes. verify calls a pair out of
// step only in the first case, the one torn state a kill can leave.
#pragma once

#include <optional>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::detail {

// ".<program name>.ptbundle-pair", in the program's folder.
std::string pair_journal_path(const std::string& output_pte);

// Written (and on disk) before the first rename: `pte_temp` and `ptd_temp`
// are the finished temporary files of the program and the data file.
Status write_pair_journal(const std::string& output_pte, const std::string& pte_temp, const std::string& output_ptd,
                          const std::string& ptd_temp);
// Removed after the second.
void remove_pair_journal(const std::string& output_pte);

// The data file beside `output_pte` when a journal proves the pair torn
// (the new data file in place, the program not yet renamed after it);
// nullopt when there is no journal or the pair is whole, old or new.
Result<std::optional<std::string>> interrupted_pair(const std::string& output_pte);

// Completes what a journal beside `output_pte` proves (see above), then
// removes the journal. Returns what was done ("" when there was no journal).
Result<std::string> finish_interrupted_pair(const std::string& output_pte);

}  // namespace ptb::detail
