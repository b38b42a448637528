#include "ptbundle/base/kernel_file_name.h"

#include <algorithm>

namespace ptb {
namespace {

constexpr size_t kMaxNameBytes = 200;
constexpr std::string_view kSuffixes[] = {".cubin", ".fatbin", ".ptx"};

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace

Status check_kernel_file_name(std::string_view name, const std::string& context) {
  const std::string expected =
      "; expected a file name of 1 to 200 bytes of letters, digits, '.', '_' and '-', starting with a letter, a digit "
      "or '_', ending in .cubin, .fatbin or .ptx";
  const std::string shown = "'" + clipped(name) + "'";
  if (name.empty() || name.size() > kMaxNameBytes || !std::all_of(name.begin(), name.end(), name_char) ||
      name.front() == '.' || name.front() == '-') {
    return invalid(context + ": kernel file name " + shown + " is not a plain file name" + expected);
  }
  for (std::string_view suffix : kSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) return {};
  }
  return invalid(context + ": kernel file name " + shown + " has no kernel suffix" + expected);
}

}  // namespace ptb
