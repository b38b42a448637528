// The kernel scan that `merge` uses to tell a cubin library from a PTX-only
// one. merge lives in libbundle, which cannot depend on libcuda (libcuda
// depends on it), so merge takes the scan as a function and this supplies
// libcuda's scanner in that shape.
#pragma once

#include "ptbundle/merge/merge.h"

namespace ptb {

LibraryScan merge_library_scan();

}  // namespace ptb
