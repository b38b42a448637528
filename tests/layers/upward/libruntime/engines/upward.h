// An engine header that returns the C edge's error code, for
// scripts/check-runtime-layers to refuse (tests/CMakeLists.txt).
#pragma once

#include "shims/shims.h"

AOTITorchError upward();
