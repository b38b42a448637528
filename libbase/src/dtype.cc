// c10's ScalarType table, and the half and bfloat16 bit conversions.
#include "ptbundle/base/dtype.h"

#include <array>
#include <bit>
#include <cmath>

namespace ptb {
namespace {

struct ScalarTypeInfo {
  const char* name;
  uint8_t size;
};

// Indexed by the number; the complex and sub-byte "bits" types are named for
// completeness even though ExecuTorch does not write them.
constexpr std::array<ScalarTypeInfo, 30> kScalarTypes = {{
    {"uint8", 1},         {"int8", 1},           {"int16", 2},           {"int32", 4},
    {"int64", 8},         {"float16", 2},        {"float32", 4},         {"float64", 8},
    {"complex32", 4},     {"complex64", 8},      {"complex128", 16},     {"bool", 1},
    {"qint8", 1},         {"quint8", 1},         {"qint32", 4},          {"bfloat16", 2},
    {"quint4x2", 1},      {"quint2x4", 1},       {"bits1x8", 1},         {"bits2x4", 1},
    {"bits4x2", 1},       {"bits8", 1},          {"bits16", 2},          {"float8_e5m2", 1},
    {"float8_e4m3fn", 1}, {"float8_e5m2fnuz", 1}, {"float8_e4m3fnuz", 1}, {"uint16", 2},
    {"uint32", 4},        {"uint64", 8},
}};

const ScalarTypeInfo* info(int32_t scalar_type) {
  if (scalar_type < 0 || static_cast<size_t>(scalar_type) >= kScalarTypes.size()) return nullptr;
  return &kScalarTypes[static_cast<size_t>(scalar_type)];
}

}  // namespace

const char* scalar_type_name(int32_t scalar_type) {
  const ScalarTypeInfo* found = info(scalar_type);
  return found ? found->name : "unknown";
}

std::optional<int8_t> scalar_type_from_name(std::string_view name) {
  for (size_t i = 0; i < kScalarTypes.size(); ++i) {
    if (name == kScalarTypes[i].name) return static_cast<int8_t>(i);
  }
  return std::nullopt;
}

std::optional<uint64_t> scalar_type_size(int32_t scalar_type) {
  const ScalarTypeInfo* found = info(scalar_type);
  if (!found) return std::nullopt;
  return found->size;
}

bool is_integer_type(int32_t scalar_type) {
  switch (scalar_type) {
    case ScalarType::Byte: case ScalarType::Char: case ScalarType::Short: case ScalarType::Int:
    case ScalarType::Long: case ScalarType::Bool: case ScalarType::UInt16: case ScalarType::UInt32:
    case ScalarType::UInt64:
      return true;
    default:
      return false;
  }
}

bool is_floating_type(int32_t scalar_type) {
  return scalar_type == ScalarType::Half || scalar_type == ScalarType::Float || scalar_type == ScalarType::Double ||
         scalar_type == ScalarType::BFloat16;
}

float half_to_float(uint16_t bits) {
  const float sign = (bits >> 15) ? -1.0f : 1.0f;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);  // zero and subnormals
  if (exponent == 0x1f) return mantissa ? std::nanf("") : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
}

uint16_t float_to_half(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00);  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504: infinity
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal, in units of 2^-24,
    // rounded to nearest even by the float addition itself.
    const float scaled = std::bit_cast<float>(magnitude) + 0.5f;  // 0.5 = 2^-1: ulp there is 2^-24
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(scaled) - 0x3f000000u));
  }
  // A normal half: drop 13 mantissa bits, rounding to nearest even; a carry
  // into the exponent is the right result.
  const uint32_t rebiased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  const uint32_t rounded = rebiased + 0xfffu + ((rebiased >> 13) & 1);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays quiet NaN
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

}  // namespace ptb
