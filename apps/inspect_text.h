// The text form of what `ptbundle inspect` found at one path (ptbundle/inspect/inspect_model.h).
#pragma once

#include <string>

#include "ptbundle/inspect/inspect_model.h"
#include "report.h"

namespace ptb::app {

// Lines for people, ending with a newline; `sha256` adds digest columns.
std::string render_inspect_text(const InspectedFile& file, bool sha256);

}  // namespace ptb::app
