// ExecuTorch's ScalarType numbers, named as PyTorch names its dtypes so that a
// person reading inspect output sees "float32", not "FLOAT" or 6.
#include <array>

#include "ptbundle/formats/pte.h"

namespace ptb {
namespace {

struct ScalarTypeInfo {
  const char* name;
  uint8_t size;  // 0: no element size (never written by ExecuTorch)
};

// Indexed by the wire number; the complex and sub-byte "bits" types are named
// for completeness even though ExecuTorch does not write them.
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

}  // namespace

const char* scalar_type_name(int8_t scalar_type) {
  if (scalar_type < 0 || static_cast<size_t>(scalar_type) >= kScalarTypes.size()) return "unknown";
  return kScalarTypes[static_cast<size_t>(scalar_type)].name;
}

std::optional<int8_t> scalar_type_from_name(std::string_view name) {
  for (size_t i = 0; i < kScalarTypes.size(); ++i) {
    if (name == kScalarTypes[i].name) return static_cast<int8_t>(i);
  }
  return std::nullopt;
}

std::optional<uint64_t> scalar_type_size(int8_t scalar_type) {
  if (scalar_type < 0 || static_cast<size_t>(scalar_type) >= kScalarTypes.size()) return std::nullopt;
  return kScalarTypes[static_cast<size_t>(scalar_type)].size;
}

}  // namespace ptb
