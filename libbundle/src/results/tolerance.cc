#include "ptbundle/results/tolerance.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "ptbundle/base/dtype.h"
#include "ptbundle/formats/pte.h"

namespace ptb {

static_assert(std::endian::native == std::endian::little,
              "tensor bytes are little-endian; a big-endian host would need byte swaps here");

namespace {

// ExecuTorch ScalarType numbers used below.
enum : int8_t {
  kByte = 0, kChar = 1, kShort = 2, kInt = 3, kLong = 4, kHalf = 5, kFloat = 6, kDouble = 7,
  kBool = 11, kBFloat16 = 15, kUInt16 = 27, kUInt32 = 28, kUInt64 = 29,
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

template <class T>
T load(const uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

bool is_integer_type(int8_t type) {
  switch (type) {
    case kByte: case kChar: case kShort: case kInt: case kLong: case kBool:
    case kUInt16: case kUInt32: case kUInt64:
      return true;
    default:
      return false;
  }
}

// long double holds every 64-bit integer exactly on the hosts we build for,
// so an integer difference is never rounded to zero.
long double integer_value(int8_t type, const uint8_t* bytes) {
  switch (type) {
    case kByte: return load<uint8_t>(bytes);
    case kChar: return load<int8_t>(bytes);
    case kShort: return load<int16_t>(bytes);
    case kInt: return load<int32_t>(bytes);
    case kLong: return load<int64_t>(bytes);
    case kBool: return load<uint8_t>(bytes) != 0;
    case kUInt16: return load<uint16_t>(bytes);
    case kUInt32: return load<uint32_t>(bytes);
    case kUInt64: return load<uint64_t>(bytes);
    default: return 0;
  }
}

double float_value(int8_t type, const uint8_t* bytes) {
  switch (type) {
    case kHalf: return half_to_float(load<uint16_t>(bytes));
    case kFloat: return load<float>(bytes);
    case kDouble: return load<double>(bytes);
    case kBFloat16: return bfloat16_to_float(load<uint16_t>(bytes));
    default: return static_cast<double>(integer_value(type, bytes));
  }
}

bool is_comparable_type(int8_t type) {
  return is_integer_type(type) || type == kHalf || type == kFloat || type == kDouble || type == kBFloat16;
}

std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

double element_value(const TensorBytes& tensor, uint64_t index) {
  const uint64_t size = scalar_type_size(tensor.scalar_type).value_or(0);
  if (!is_comparable_type(tensor.scalar_type) || size == 0 || index >= tensor.data.size() / size) return 0;
  return float_value(tensor.scalar_type, tensor.data.data() + index * size);
}

Tolerance default_tolerance(int8_t scalar_type) {
  switch (scalar_type) {
    case kFloat:
    case kDouble:
      return {1e-5, 1e-4};
    case kHalf:
      return {1e-3, 1e-2};
    case kBFloat16:
      return {1e-2, 4e-2};
    default:
      return {0, 0};
  }
}

Tolerance output_tolerance(const TensorBytes& expected) {
  int significand = 0;  // bits, the implicit one included
  double ulps = 0;
  double rtol = 0;
  switch (expected.scalar_type) {
    case kBFloat16: significand = 8; ulps = 4; rtol = std::ldexp(1.0, -7); break;
    case kHalf: significand = 11; ulps = 4; rtol = std::ldexp(1.0, -10); break;
    case kFloat: significand = 24; ulps = 2048; rtol = std::ldexp(1.0, -16); break;
    case kDouble: significand = 53; ulps = 2048; rtol = std::ldexp(1.0, -45); break;
    default: return {0, 0, std::string(scalar_type_name(expected.scalar_type)) + ": exact"};
  }
  double magnitude = 0;
  const uint64_t element_size = *scalar_type_size(expected.scalar_type);
  const uint64_t count = expected.data.size() / element_size;
  for (uint64_t i = 0; i < count; ++i) {
    const double value = std::fabs(float_value(expected.scalar_type, expected.data.data() + i * element_size));
    if (std::isfinite(value)) magnitude = std::max(magnitude, value);
  }
  const double scale = magnitude > 0 ? magnitude : 1.0;
  // ulp(M): 2^(e - significand + 1) for M in [2^e, 2^(e+1)).
  const double ulp = std::ldexp(1.0, std::ilogb(scale) - significand + 1);
  Tolerance tolerance{ulps * ulp, rtol, ""};
  tolerance.rule = std::string(scalar_type_name(expected.scalar_type)) + ": " + format_number("%g", ulps) +
                   " ulp at max |expected| " + (magnitude > 0 ? format_number("%g", magnitude) : "(none nonzero, 1)");
  return tolerance;
}

bool element_matches(double got, double want, const Tolerance& tolerance) {
  if (got == want) return true;  // also the same infinity
  if (std::isnan(got) && std::isnan(want)) return true;
  const double error = std::fabs(got - want);
  // A NaN or infinity on one side only makes the error non-finite, which
  // fails even where rtol * |want| is infinite.
  return std::isfinite(error) && error <= tolerance.atol + tolerance.rtol * std::fabs(want);
}

Result<ComparisonStats> compare_tensors(const TensorBytes& got, const TensorBytes& want,
                                        const Tolerance& tolerance) {
  if (got.scalar_type != want.scalar_type) {
    return invalid(std::string("dtype ") + scalar_type_name(got.scalar_type) + ", expected " +
                   scalar_type_name(want.scalar_type));
  }
  if (got.shape != want.shape) {
    return invalid("shape " + shape_text(got.shape) + ", expected " + shape_text(want.shape));
  }
  if (!is_comparable_type(want.scalar_type)) {
    return invalid(std::string("dtype ") + scalar_type_name(want.scalar_type) + " cannot be compared");
  }
  const uint64_t element_size = *scalar_type_size(want.scalar_type);
  uint64_t count = 1;
  for (uint64_t dim : want.shape) {
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / dim) return invalid("shape overflows");
    count *= dim;
  }
  if (count > std::numeric_limits<uint64_t>::max() / element_size) return invalid("shape overflows");
  const uint64_t expected_bytes = count * element_size;
  if (got.data.size() != expected_bytes || want.data.size() != expected_bytes) {
    return invalid("holds " + std::to_string(got.data.size()) + " and " + std::to_string(want.data.size()) +
                   " bytes; expected " + std::to_string(expected_bytes) + " for " + shape_text(want.shape));
  }

  ComparisonStats stats;
  stats.element_count = count;
  const bool integer = is_integer_type(want.scalar_type);
  double abs_sum = 0;
  double rel_sum = 0;
  uint64_t rel_count = 0;
  double worst_error = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* got_bytes = got.data.data() + i * element_size;
    const uint8_t* want_bytes = want.data.data() + i * element_size;
    const double want_value = float_value(want.scalar_type, want_bytes);
    if (want_value != 0) ++rel_count;
    if (std::memcmp(got_bytes, want_bytes, element_size) == 0) continue;

    const double got_value = float_value(got.scalar_type, got_bytes);
    double error = 0;
    if (integer) {
      error = static_cast<double>(
          std::fabs(integer_value(got.scalar_type, got_bytes) - integer_value(want.scalar_type, want_bytes)));
    } else if (std::isnan(got_value) && std::isnan(want_value)) {
      continue;
    } else if (got_value == want_value) {
      continue;  // +0 and -0, or NaN payloads that differ
    } else {
      error = std::fabs(got_value - want_value);
      if (!std::isfinite(error)) error = kInfinity;  // NaN against a number counts as infinitely far
    }

    const double scaled = tolerance.rtol * std::fabs(want_value);
    const double allowed = tolerance.atol + scaled;
    const bool passes = std::isfinite(error) && error <= allowed;
    abs_sum += error;
    stats.max_abs_error = std::max(stats.max_abs_error, error);
    if (want_value != 0) {
      const double relative = error / std::fabs(want_value);
      rel_sum += relative;
      stats.max_rel_error = std::max(stats.max_rel_error, relative);
    } else if (error > 0) {
      stats.max_rel_error = kInfinity;
    }
    const double needed = std::isfinite(error) ? error - scaled : kInfinity;
    stats.required_atol = std::max(stats.required_atol, needed);
    if (!passes) {
      ++stats.mismatch_count;
      if (!stats.worst_index || error > worst_error) {
        worst_error = error;
        stats.worst_index = i;
        stats.worst_got = got_value;
        stats.worst_want = want_value;
        stats.worst_allowed = allowed;
        stats.worst_abs_error = error;
      }
    }
  }
  stats.mean_abs_error = count ? abs_sum / static_cast<double>(count) : 0;
  stats.mean_rel_error = rel_count ? rel_sum / static_cast<double>(rel_count) : 0;
  return stats;
}

void check_unvalued_output(const TensorBytes& got, int8_t scalar_type, const std::vector<uint64_t>& shape,
                           OutputComparison& out) {
  out.values_compared = false;
  if (got.scalar_type != scalar_type) {
    out.problem = std::string("dtype ") + scalar_type_name(got.scalar_type) + ", expected " + scalar_type_name(scalar_type) +
                  " (the method's signature)";
    return;
  }
  if (got.shape != shape) {
    out.problem = "shape " + shape_text(got.shape) + ", expected " + shape_text(shape) + " (the method's signature)";
    return;
  }
  auto element_size = scalar_type_size(scalar_type);
  if (!element_size || !is_comparable_type(scalar_type)) {
    out.problem = std::string("dtype ") + scalar_type_name(scalar_type) + " cannot be checked for finite values";
    return;
  }
  const uint64_t count = got.data.size() / *element_size;
  out.stats.element_count = count;
  if (is_integer_type(scalar_type)) return;
  for (uint64_t i = 0; i < count; ++i) {
    const double value = float_value(scalar_type, got.data.data() + i * *element_size);
    if (std::isfinite(value)) continue;
    if (!out.stats.worst_index) {
      out.stats.worst_index = i;
      out.stats.worst_got = value;
    }
    ++out.stats.mismatch_count;
  }
  if (out.stats.mismatch_count) {
    out.problem = std::to_string(out.stats.mismatch_count) + " of " + std::to_string(count) +
                  " values are not finite (element " + std::to_string(*out.stats.worst_index) + " is " +
                  format_number("%g", out.stats.worst_got) + ")";
  }
}

namespace {

// How far the worst element of a failing output is off: the ratio of its
// error to what was allowed there (infinite for NaN and infinities).
double badness(const OutputComparison& output) {
  if (!output.problem.empty()) return kInfinity;
  const auto& stats = output.stats;
  const double error = stats.worst_abs_error;
  if (!std::isfinite(error)) return kInfinity;
  return stats.worst_allowed > 0 ? error / stats.worst_allowed : kInfinity;
}

}  // namespace

std::string failure_detail(const OutputComparison& output) {
  if (!output.problem.empty()) return output.problem;
  const auto& stats = output.stats;
  const Tolerance& t = output.tolerance;
  std::string rule = "atol " + format_number("%.3g", t.atol) + " + rtol " + format_number("%.3g", t.rtol) +
                     " * |expected|" + (t.rule.empty() ? "" : "; " + t.rule);
  const double error = stats.worst_abs_error;
  if (!std::isfinite(error)) {
    return "element " + std::to_string(*stats.worst_index) + " is " + format_number("%g", stats.worst_got) +
           ", expected " + format_number("%g", stats.worst_want) + " (" + rule + ")";
  }
  return "max abs diff " + format_number("%.2e", error) + " > " + format_number("%g", stats.worst_allowed) +
         " at element " + std::to_string(*stats.worst_index) + " (" + rule + ")";
}

std::string test_case_verdict(const std::string& part, const std::vector<OutputComparison>& outputs) {
  const OutputComparison* worst = nullptr;
  double max_abs = 0;
  size_t compared = 0;
  std::string unvalued;  // "output 0, output 1"
  for (const auto& output : outputs) {
    if (!output.values_compared) unvalued += (unvalued.empty() ? "" : ", ") + output.name;
    else ++compared;
    if (output.passed()) {
      max_abs = std::max(max_abs, output.stats.max_abs_error);
      continue;
    }
    if (!worst || badness(output) > badness(*worst)) worst = &output;
  }
  const std::string not_compared =
      unvalued.empty() ? ""
                       : "; values of " + unvalued +
                             " not compared: the test case records inputs only (a sampler's example, which never "
                             "reproduces its outputs); checked: dtype and shape against the signature, every value finite";
  if (!worst && compared == 0) {
    return "part " + part + " ran its test case (" + std::to_string(outputs.size()) +
           (outputs.size() == 1 ? " output" : " outputs") + " of the dtype and shape its signature gives, every value finite" +
           not_compared + ")";
  }
  if (!worst) {
    return "part " + part + " reproduces its test case (" + std::to_string(compared) +
           (compared == 1 ? " output" : " outputs") + ", max abs diff " + format_number("%.2e", max_abs) +
           not_compared + ")";
  }
  std::string detail = failure_detail(*worst);
  if (outputs.size() > 1) detail = worst->name + ": " + detail;
  return "part " + part + " does not reproduce its test case (" + detail + "); export it again on this GPU";
}

}  // namespace ptb
