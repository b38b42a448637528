#include "ptbundle/program/program_argument.h"

namespace ptb {

Result<ProgramArgument> parse_program_argument(std::string_view text) {
  const std::string shape = "expected PROGRAM.pte or PROGRAM.pte,DATA.ptd";
  if (text.empty()) return usage_error("an empty program argument; " + shape);
  if (text.front() == ',') {
    return usage_error("\"" + std::string(text) + "\": no program before the data file; " + shape);
  }
  for (size_t comma = text.find(','); comma != std::string_view::npos; comma = text.find(',', comma + 1)) {
    std::string_view program = text.substr(0, comma);
    if (!program.ends_with(".pte") && !program.ends_with(".bpte") && !program.ends_with(".pt2")) continue;
    if (comma + 1 == text.size()) {
      return usage_error("\"" + std::string(text) + "\": no data file after the comma; " + shape);
    }
    return ProgramArgument{std::string(program), std::string(text.substr(comma + 1))};
  }
  return ProgramArgument{std::string(text), std::nullopt};
}

}  // namespace ptb
