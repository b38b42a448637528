// Part names. A part name becomes file names inside a bundle (<name>.pte,
// <name>.ptd, testcases/<name>.ptd) and ExecuTorch's `data_name` compile spec,
// so it must be a safe single file name on Linux, macOS and Windows alike.
// The check runs where a name is given (command line) and again wherever a
// name is read from a file and then used as a path (manifest, compile spec).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb {

inline constexpr size_t kMaxPartNameLength = 200;

// 1 to 200 ASCII letters, digits, '_', '-', '.'; not starting with '.' or
// '-'; not a Windows device name (CON, PRN, AUX, NUL, COM0-COM9, LPT0-LPT9,
// any case, with or without an extension); not ending with ".ptd" (any case).
// `where` starts the error message ("--part", "bundle.json: parts[2].name").
Status check_part_name(std::string_view name, const std::string& where);

// Refuses two names that differ only in ASCII case (one file on Windows and
// macOS), and exact duplicates.
Status check_case_collisions(const std::vector<std::string>& names, const std::string& where);

}  // namespace ptb
