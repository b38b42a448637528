#include "ptbundle/formats/json.h"

namespace ptb {

Result<Json> parse_json_bounded(std::string_view text, const std::string& name, std::string_view expected,
                                size_t max_depth) {
  // Brackets inside strings do not nest; a backslash escapes the next byte.
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return invalid(name + ": at byte " + std::to_string(i) + ": JSON nested more than " + std::to_string(max_depth) +
                       " levels deep; expected " + std::string(expected));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  Json json = Json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded()) return invalid(name + ": not valid JSON; expected " + std::string(expected));
  return json;
}

const char* json_kind(const Json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

}  // namespace ptb
