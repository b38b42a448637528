// Comparing outputs with the expected outputs of a test case.
//
// The element rule is ExecuTorch BundledProgram's: an element passes when it
// is equal to the expected one, when both are NaN, when both are the same
// infinity, or when |got - want| <= atol + rtol * |want|.
//
// Defaults by dtype (default_tolerance), chosen for outputs of compiled GPU
// models, which reorder sums and may use reduced-precision matrix units:
//   float32, float64      atol 1e-5  rtol 1e-4
//   float16               atol 1e-3  rtol 1e-2  (about 10 ulp near 1.0)
//   bfloat16              atol 1e-2  rtol 4e-2  (about 5 ulp near 1.0)
//   integers, bool        exact      (atol 0, rtol 0)
//
// The statistics follow Polygraphy's comparison report: per output the max
// and mean absolute and relative error, and the smallest atol that would have
// passed with the same rtol, so a user can see how far off a result is
// rather than only that it is off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// By ExecuTorch ScalarType number; unknown types compare exactly.
Tolerance default_tolerance(int8_t scalar_type);

// The element rule above.
bool element_matches(double got, double want, const Tolerance& tolerance);

// A tensor's bytes as laid out in an .npy file: little-endian, C order.
struct TensorBytes {
  int8_t scalar_type = 0;
  std::vector<uint64_t> shape;
  Bytes data;
};

struct ComparisonStats {
  uint64_t element_count = 0;
  uint64_t mismatch_count = 0;
  // Over all elements. An element with a NaN or infinity on one side only
  // counts as an infinite error.
  double max_abs_error = 0;
  double mean_abs_error = 0;
  // |got - want| / |want|. The max counts a nonzero difference from an
  // expected zero as infinite; the mean is over nonzero expected values.
  double max_rel_error = 0;
  double mean_rel_error = 0;
  // The smallest atol that would have passed every element with this rtol.
  double required_atol = 0;
  // The failing element with the largest absolute error, if any failed.
  std::optional<uint64_t> worst_index;
  double worst_got = 0;
  double worst_want = 0;
  double worst_abs_error = 0;
  double worst_allowed = 0;  // atol + rtol * |want| there

  bool passed() const { return mismatch_count == 0; }
};

// Fails (without comparing) when dtype or shape differ, or when a byte count
// does not match its shape; the message says which.
Result<ComparisonStats> compare_tensors(const TensorBytes& got, const TensorBytes& want,
                                        const Tolerance& tolerance);

// One output's comparison as a report prints it.
struct OutputComparison {
  std::string name;  // "output 0" or the output's name
  Tolerance tolerance;
  ComparisonStats stats;
  std::string problem;  // non-empty when the tensors could not be compared (dtype, shape)
  bool passed() const { return problem.empty() && stats.passed(); }
};

// "part encoder reproduces its test case (1 output, max abs diff 1.19e-07)" or
// "part encoder does not reproduce its test case (max abs diff 9.53e-02 > 0.075);
// export it again on this GPU". With several outputs the failing one is named.
std::string test_case_verdict(const std::string& part, const std::vector<OutputComparison>& outputs);

// "[4, 16]"
std::string shape_text(const std::vector<uint64_t>& shape);

}  // namespace ptb
