// The names of kernel files (formats/kernel_files.h in libbundle): what export
// takes from a package, verify checks in a bundle and a runtime module
// creates in its private folder. In libbase so that the runtime modules,
// which link no file format, check names by the same rule.
#pragma once

#include <string>
#include <string_view>

#include "ptbundle/base/result.h"

namespace ptb {

// A name a runner may create in its private folder: 1 to 200 bytes of
// [A-Za-z0-9._-], starting with a letter, a digit or '_', ending in ".cubin",
// ".fatbin" or ".ptx". Fails naming `context` and what was expected.
Status check_kernel_file_name(std::string_view name, const std::string& context);

}  // namespace ptb
