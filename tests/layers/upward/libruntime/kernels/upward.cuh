// A kernel header that reaches up into the engines, for
// scripts/check-runtime-layers to refuse (tests/CMakeLists.txt).
#pragma once

#include "engines/tensor.h"
#include "kernels.h"
#include "../engines/gemm.h"
