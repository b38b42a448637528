// Comparing outputs with the expected outputs of a test case.
//
// The element rule is ExecuTorch BundledProgram's: an element passes when it
// is equal to the expected one, when both are NaN, when both are the same
// infinity, or when |got - want| <= atol + rtol * |want|.
//
// The one tolerance rule (output_tolerance), which export records in a
// bundle's test case and verify, `run --expect` and the robot API (through
// verify) apply: it follows from the expected output's dtype and its largest
// finite magnitude M, with ulp(M) the spacing of the dtype's values at M:
//   bfloat16   atol 4 ulp(M) (8-bit significand)   rtol 2^-7
//   float16    atol 4 ulp(M) (11-bit significand)  rtol 2^-10
//   float32    atol 2048 ulp(M) = 2^-12 of M's binade   rtol 2^-16
//   float64    atol 2048 ulp(M)                    rtol 2^-45
//   integers, bool  exact
// Why: a compiled GPU program reorders and fuses sums, so an element's error
// scales with the largest values it was summed with, not with its own value.
// For 16-bit outputs the final rounding alone moves an element by half an
// ulp of its own binade, and intermediate roundings (a hidden layer kept in
// bfloat16) by a few ulps of the output's scale; in float32 the error is the
// accumulation's, which a few thousand ulps of M cover for sums of thousands
// of terms. Without a nonzero finite expected value M is 1.
//
// The statistics follow Polygraphy's comparison report: per output the max
// and mean absolute and relative error, and the smallest atol that would have
// passed with the same rtol, so a user can see how far off a result is
// rather than only that it is off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/base/text.h"

namespace ptb {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  // How it was chosen, for messages: "bfloat16: 4 ulp at max |expected|
  // 0.5", "recorded in bundle.json", "--atol/--rtol"; empty: not said.
  std::string rule;

  Tolerance() = default;
  Tolerance(double a, double r, std::string why = {}) : atol(a), rtol(r), rule(std::move(why)) {}
};

// By ExecuTorch ScalarType number, with no magnitude known: the old fixed
// defaults (float32 1e-5/1e-4, float16 1e-3/1e-2, bfloat16 1e-2/4e-2,
// integers exact). Commands use output_tolerance.
Tolerance default_tolerance(int8_t scalar_type);

struct TensorBytes;
// The rule above for one expected output.
Tolerance output_tolerance(const TensorBytes& expected);

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

// Element `index` of a tensor as a double, as the comparisons read it
// (integers and bool converted); 0 past the end or for a dtype they cannot
// compare.
double element_value(const TensorBytes& tensor, uint64_t index);

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
  // false: a sampler's output, checked by dtype, shape and finiteness only
  // (its test case records no expected values).
  bool values_compared = true;
  bool passed() const { return problem.empty() && stats.passed(); }
};

// A sampler's output: `got` must have `scalar_type` and `shape`, and every
// value must be finite (integers always are); the result goes into `out`
// (values_compared false, problem set when it fails). stats.element_count
// and mismatch_count (values not finite) are filled.
void check_unvalued_output(const TensorBytes& got, int8_t scalar_type, const std::vector<uint64_t>& shape,
                           OutputComparison& out);

// The measured error against what was allowed and the rule behind it:
// "max abs diff 1.95e-03 > 0.0156 (atol 0.0156 + rtol 0.0078 * |expected|;
// bfloat16: 4 ulp at max |expected| 0.5)".
std::string failure_detail(const OutputComparison& output);

// Outputs whose values were not compared (values_compared false) are named
// as such, with why: "...; values of output 0 not compared: the test case
// records inputs only (a sampler's example); checked: dtype, shape, finite".
// "part encoder reproduces its test case (1 output, max abs diff 1.19e-07)" or
// "part encoder does not reproduce its test case (max abs diff 9.53e-02 > 0.075);
// export it again on this GPU". With several outputs the failing one is named.
std::string test_case_verdict(const std::string& part, const std::vector<OutputComparison>& outputs);

}  // namespace ptb
