// The element types of tensors, as c10 (and so ExecuTorch's ScalarType,
// AOTInductor's aoti_torch_dtype_* and the .pte/.ptd wire) number them: the
// one table of numbers, element sizes and names every library uses, and the
// float16/bfloat16 conversions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace ptb {

// c10::ScalarType's numbers. A struct with an unscoped enum rather than an
// enum class: wire values are plain integers (int8_t in the FlatBuffers,
// int32_t in AOTInductor's ABI) and switch on them as `case ScalarType::Float:`.
struct ScalarType {
  enum : int8_t {
    Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
    ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, QInt8 = 12, QUInt8 = 13, QInt32 = 14,
    BFloat16 = 15, QUInt4x2 = 16, QUInt2x4 = 17, Bits1x8 = 18, Bits2x4 = 19, Bits4x2 = 20, Bits8 = 21,
    Bits16 = 22, Float8_e5m2 = 23, Float8_e4m3fn = 24, Float8_e5m2fnuz = 25, Float8_e4m3fnuz = 26,
    UInt16 = 27, UInt32 = 28, UInt64 = 29,
  };
};

// "float32", "bfloat16", ... as PyTorch names them; "unknown" for a number
// outside the table.
const char* scalar_type_name(int32_t scalar_type);
std::optional<int8_t> scalar_type_from_name(std::string_view name);
// Bytes per element; nullopt outside the table.
std::optional<uint64_t> scalar_type_size(int32_t scalar_type);

// Elements of a tensor of `sizes` (any integer type; an empty list is a
// scalar: 1). Nullopt when a size is negative or the product overflows 64
// bits: the one overflow rule for sizes read from a file.
template <typename Sizes>
std::optional<uint64_t> element_count(const Sizes& sizes) {
  uint64_t count = 1;
  for (const auto& size : sizes) {
    if constexpr (std::is_signed_v<std::decay_t<decltype(size)>>) {
      if (size < 0) return std::nullopt;
    }
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(size), &count)) return std::nullopt;
  }
  return count;
}

// Bytes of a dense tensor of `sizes` and `scalar_type`: nullopt for a dtype
// outside the table, a negative size or a size past 64 bits.
template <typename Sizes>
std::optional<uint64_t> tensor_bytes(const Sizes& sizes, int32_t scalar_type) {
  std::optional<uint64_t> element = scalar_type_size(scalar_type);
  std::optional<uint64_t> count = element_count(sizes);
  uint64_t bytes = 0;
  if (!element || !count || __builtin_mul_overflow(*count, *element, &bytes)) return std::nullopt;
  return bytes;
}

// Integers and bool (compared exactly); the four floating types (float16,
// float32, float64, bfloat16: compared with a tolerance).
bool is_integer_type(int32_t scalar_type);
bool is_floating_type(int32_t scalar_type);

// IEEE half and bfloat16 bit patterns. To float: exact. From float: rounded
// to nearest, ties to even; out of range gives infinity, NaN stays NaN.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace ptb
