// The one way ptbundle parses JSON it did not write (bundle.json, signature
// files): nesting depth bounded by a scan before nlohmann's parser, which
// recurses, sees the text; errors name the file and the byte. Only the files
// that read or write JSON include this header.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ptbundle/base/result.h"

namespace ptb {

using Json = nlohmann::ordered_json;

// No valid manifest or signature nests deeper than 8.
inline constexpr size_t kMaxJsonDepth = 64;

// `text` parsed when it is at most `max_depth` arrays/objects deep (one
// pass, no recursion, so 100,000 nested brackets cost nothing). Errors
// start with `name` and end with "expected <expected>".
Result<Json> parse_json_bounded(std::string_view text, const std::string& name, std::string_view expected,
                                size_t max_depth = kMaxJsonDepth);

// "null", "a boolean", "a number", "a string", "an array" or "an object":
// what a reader found where it expected another kind, for its message.
const char* json_kind(const Json& value);

}  // namespace ptb
