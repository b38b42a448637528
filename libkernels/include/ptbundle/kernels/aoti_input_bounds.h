// The bounds of an AOTInductor program's dynamic dimensions, read from its
// library. PyTorch records them nowhere else that a .pte or a .pt2 keeps: the
// generated input checks hold them only as the string literals of their
// messages,
//   "input_handles[0]: dim value is too small at 0, "  "expected it to be >= 2, "
//   "input_handles[0]: dim value is too large at 0, "  "expected to be <= 256, "
// (PyTorch 2.11; the lower bound is 2 even for Dim(min=1), as Inductor
// specializes sizes 0 and 1). In the wrapper source the two literals of a
// check are adjacent; in the compiled library the compiler keeps them apart
// and merges equal ones, so a bound is only paired with its dimension when
// that is unambiguous: one distinct lower (or upper) bound in the whole
// library. Anything else is left unknown, never guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"

namespace ptb {

struct AotiDynamicDim {
  uint32_t input = 0;
  uint32_t dim = 0;
  std::optional<int64_t> min;  // the library refuses smaller sizes; nullopt: checked, bound unknown
  std::optional<int64_t> max;  // the library refuses larger sizes
};

struct AotiInputBounds {
  std::vector<AotiDynamicDim> dims;   // sorted by input, then dim
  std::vector<std::string> problems;  // what was ignored and where (offset), for diagnostics
  const AotiDynamicDim* find(uint32_t input, uint32_t dim) const;
};

// Scans `bytes` (a library, or its wrapper source) once. Hostile bytes give
// fewer dims or a problem, never an error: the scan keeps at most
// kMaxAotiDynamicDims dims (two checks each, and as many bounds), and reads
// numbers of at most 18 digits.
constexpr size_t kMaxAotiDynamicDims = 4096;
AotiInputBounds read_aoti_input_bounds(Bytes bytes);

// Both readings of one program (its wrapper source and its library) as one:
// each dim either names, with the larger lower bound and the smaller upper
// bound where both know one. A source can claim wider bounds than the
// library checks; the library refuses what passes its tighter ones.
AotiInputBounds tightest_bounds(const AotiInputBounds& a, const AotiInputBounds& b);

// "2..256"; "?" stands for a bound not known.
std::string bounds_text(const AotiDynamicDim& dim);

// Why `shape` of input `input` is refused by the library's checks, or
// nullopt when every known bound holds.
std::optional<std::string> bounds_violation(const AotiInputBounds& bounds, uint32_t input,
                                            const std::vector<uint64_t>& shape);

}  // namespace ptb
