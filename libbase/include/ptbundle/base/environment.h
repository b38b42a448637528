// The environment variables libbase offers every library, read here and
// nowhere else. ptbundle(1), ENVIRONMENT, lists every variable the binaries
// read.
#pragma once

#include <string>

namespace ptb {

// Where temporary files go: $TMPDIR, or /tmp when it is unset or empty.
std::string temporary_folder();

}  // namespace ptb
