// The text form of one `ptbundle inspect` file object (see ptbundle/inspect.h).
#pragma once

#include <string>

#include "report.h"

namespace ptb::app {

// Lines for people, ending with a newline; `sha256` adds digest columns.
std::string render_inspect_text(const Json& file_object, bool sha256);

}  // namespace ptb::app
