// The text form of what `ptbundle inspect` found at one path (ptbundle/inspect/inspect_model.h).
#pragma once

#include <string>

#include "ptbundle/inspect/inspect_model.h"
#include "report.h"

namespace ptb::app {

// Lines for people, ending with a newline; `sha256` adds digest columns.
std::string render_inspect_text(const InspectedFile& file, bool sha256);

// A bundle folder's text in the pieces render_inspect_text joins, for a
// caller that prints each part as it is inspected (InspectOptions::each_part):
// the file and manifest lines, one part, the signature lines.
std::string render_bundle_text_head(const InspectedFile& bundle);
std::string render_bundle_text_part(const InspectPart& part, bool sha256);
std::string render_bundle_text_tail(const InspectedFile& bundle);

}  // namespace ptb::app
