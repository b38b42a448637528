#include "ptbundle/bundle/names.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <map>

namespace ptb {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower(c);
  return out;
}

bool allowed_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

std::string describe_char(char c) {
  char text[48];
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x21 && byte < 0x7f)
    std::snprintf(text, sizeof text, "'%c'", c);
  else
    std::snprintf(text, sizeof text, "byte 0x%02x", byte);
  return text;
}

// Windows resolves these names to devices whatever the extension, so
// "nul.txt" opens the null device, not a file.
bool is_windows_device(std::string_view name) {
  std::string stem = lowercase(name.substr(0, name.find('.')));
  static const std::array<const char*, 4> kPlain = {"con", "prn", "aux", "nul"};
  for (const char* device : kPlain)
    if (stem == device) return true;
  if (stem.size() == 4 && (stem.starts_with("com") || stem.starts_with("lpt")) && stem[3] >= '0' &&
      stem[3] <= '9')
    return true;
  return false;
}

Error name_error(const std::string& where, std::string_view name, const std::string& what) {
  return invalid(where + ": part name \"" + printable(name) + "\" " + what);
}

}  // namespace

Status check_part_name(std::string_view name, const std::string& where) {
  if (name.empty()) return invalid(where + ": part name is empty; expected 1 to 200 characters");
  if (name.size() > kMaxPartNameLength) {
    return invalid(where + ": part name \"" + printable(name.substr(0, 40)) + "...\" is " +
                   std::to_string(name.size()) + " characters long; expected at most " +
                   std::to_string(kMaxPartNameLength));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!allowed_char(name[i])) {
      return name_error(where, name,
                        "contains " + describe_char(name[i]) + " at position " + std::to_string(i) +
                            "; expected only ASCII letters, digits, '_', '-' and '.'");
    }
  }
  if (name.front() == '.')
    return name_error(where, name, "starts with '.' (a hidden file, or '.' and '..'); expected a letter, digit or '_' first");
  if (name.front() == '-')
    return name_error(where, name, "starts with '-', which a command line reads as an option; expected a letter, digit or '_' first");
  if (is_windows_device(name)) {
    return name_error(where, name,
                      "is a Windows device name (CON, PRN, AUX, NUL, COM0-COM9, LPT0-LPT9, with any "
                      "extension), which Windows cannot store as a file; expected another name");
  }
  if (lowercase(name).ends_with(".ptd")) {
    return name_error(where, name,
                      "ends with \".ptd\"; ExecuTorch adds \".ptd\" to a data name only when it is "
                      "missing, so \"x\" and \"x.ptd\" would be one file; expected a name without it");
  }
  return {};
}

Status check_case_collisions(const std::vector<std::string>& names, const std::string& where) {
  std::map<std::string, const std::string*> seen;
  for (const auto& name : names) {
    auto [it, inserted] = seen.emplace(lowercase(name), &name);
    if (inserted) continue;
    if (*it->second == name) return invalid(where + ": part name \"" + name + "\" is given twice");
    return invalid(where + ": part names \"" + *it->second + "\" and \"" + name +
                   "\" differ only in case; Windows and macOS store them as one file; expected "
                   "names that differ in more than case");
  }
  return {};
}

}  // namespace ptb
