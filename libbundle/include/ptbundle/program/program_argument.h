// The PROGRAM[,DATA] argument that export (--part NAME=SOURCE), merge,
// verify and run take, and the one rule that splits it.
//
// Paths may contain commas, so only the comma right after a program's name
// splits: the first comma preceded by ".pte", ".bpte" or ".pt2". Everything
// after it is the data file, verbatim (it may hold commas too); every other
// comma is part of the program's path. (A .pt2 holds its own weights; it
// splits so that the command can say so rather than find no such file.)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ptbundle/base/result.h"

namespace ptb {

struct ProgramArgument {
  std::string program;
  std::optional<std::string> data;  // given after the comma
};

// A usage error when the argument is empty, starts with a comma (no
// program) or ends with the splitting comma (no data file).
Result<ProgramArgument> parse_program_argument(std::string_view text);

}  // namespace ptb
