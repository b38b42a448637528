// The environment variables libbase offers every library, read here and
// nowhere else. ptbundle(1), ENVIRONMENT, lists every variable the binaries
// read.
#pragma once

#include <string>

namespace ptb {

// Where temporary files go: $TMPDIR, or /tmp when it is unset or empty.
std::string temporary_folder();
// "$TMPDIR" when it is set, else "/tmp": how messages name that folder.
std::string temporary_folder_name();

}  // namespace ptb
