// Walking a strided view, and reading, writing and combining one element of
// any real dtype, in device code, for the kernels that take every dtype: the value passes
// through a double, which holds every value of every dtype but the largest
// 64-bit integers exactly. Integer stores saturate (a conversion out of
// range is undefined in C++); bool stores test for nonzero.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/kernels.h"
#include "ptbundle/base/dtype.h"

namespace ptb::builtin::kernels {

// The element offset of row-major position `i` of `layout`.
__device__ inline int64_t offset_of(int64_t i, const Layout& layout) {
  int64_t at = 0;
  for (int32_t k = layout.dims - 1; k >= 0; --k) {
    at += (i % layout.sizes[k]) * layout.strides[k];
    i /= layout.sizes[k];
  }
  return at;
}

__host__ __device__ inline bool floating_dtype(int32_t dtype) {
  return dtype == ScalarType::Float || dtype == ScalarType::Double || dtype == ScalarType::Half ||
         dtype == ScalarType::BFloat16;
}

// An element's value from its bits (the low bytes of `bits`).
__device__ inline double from_bits(uint64_t bits, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Float: return __uint_as_float(static_cast<uint32_t>(bits));
    case ScalarType::Double: return __longlong_as_double(static_cast<long long>(bits));
    case ScalarType::Half: return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    case ScalarType::BFloat16: return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(bits)));
    case ScalarType::Byte: return static_cast<uint8_t>(bits);
    case ScalarType::Char: return static_cast<int8_t>(bits);
    case ScalarType::Short: return static_cast<int16_t>(bits);
    case ScalarType::Int: return static_cast<int32_t>(bits);
    case ScalarType::Long: return static_cast<double>(static_cast<int64_t>(bits));
    case ScalarType::Bool: return (bits & 0xff) != 0 ? 1.0 : 0.0;
    default: return 0;
  }
}

template <class T>
__device__ inline T saturate(double value, double low, double high) {
  if (value != value) return T(0);
  if (value <= low) return static_cast<T>(low);
  if (value >= high) return static_cast<T>(high);
  return static_cast<T>(value);
}

// `value` as an element's bits.
__device__ inline uint64_t to_bits(double value, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Float: return __float_as_uint(static_cast<float>(value));
    case ScalarType::Double: return static_cast<uint64_t>(__double_as_longlong(value));
    case ScalarType::Half: return __half_as_ushort(__double2half(value));
    case ScalarType::BFloat16: return __bfloat16_as_ushort(__double2bfloat16(value));
    case ScalarType::Byte: return saturate<uint8_t>(value, 0, 255);
    case ScalarType::Char: return static_cast<uint8_t>(saturate<int8_t>(value, -128, 127));
    case ScalarType::Short: return static_cast<uint16_t>(saturate<int16_t>(value, -32768, 32767));
    case ScalarType::Int: return static_cast<uint32_t>(saturate<int32_t>(value, -2147483648.0, 2147483647.0));
    case ScalarType::Long: {
      // 2^63 is the first double above INT64_MAX.
      if (value != value) return 0;
      if (value >= 9223372036854775808.0) return static_cast<uint64_t>(INT64_MAX);
      if (value <= -9223372036854775808.0) return static_cast<uint64_t>(INT64_MIN);
      return static_cast<uint64_t>(static_cast<int64_t>(value));
    }
    case ScalarType::Bool: return value != 0 ? 1 : 0;
    default: return 0;
  }
}

__device__ inline uint64_t load_bits(const void* base, int64_t at, int itemsize) {
  const char* p = static_cast<const char*>(base) + at * itemsize;
  switch (itemsize) {
    case 1: return *reinterpret_cast<const uint8_t*>(p);
    case 2: return *reinterpret_cast<const uint16_t*>(p);
    case 4: return *reinterpret_cast<const uint32_t*>(p);
    default: return *reinterpret_cast<const uint64_t*>(p);
  }
}

__device__ inline void store_bits(void* base, int64_t at, int itemsize, uint64_t bits) {
  char* p = static_cast<char*>(base) + at * itemsize;
  switch (itemsize) {
    case 1: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(bits); break;
    case 2: *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(bits); break;
    case 4: *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(bits); break;
    default: *reinterpret_cast<uint64_t*>(p) = bits; break;
  }
}

__device__ inline double load_value(const void* base, int64_t at, int32_t dtype, int itemsize) {
  return from_bits(load_bits(base, at, itemsize), dtype);
}

// What a reduction starts from, so that a target's old value can be left out.
__device__ inline double reduce_identity(Reduce reduce) {
  switch (reduce) {
    case Reduce::Prod: return 1;
    case Reduce::Max: return -__longlong_as_double(0x7ff0000000000000LL);  // -inf; integers saturate
    case Reduce::Min: return __longlong_as_double(0x7ff0000000000000LL);
    default: return 0;
  }
}

__device__ inline double reduce_pair(double a, double b, Reduce reduce) {
  switch (reduce) {
    case Reduce::Prod: return a * b;
    // NaN wins, as in ATen's amax/amin.
    case Reduce::Max: return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b);
    case Reduce::Min: return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b);
    default: return a + b;
  }
}

// base[at] = reduce(base[at], value), atomically: a compare-and-swap on the
// aligned word that holds the element (1- and 2-byte elements share theirs
// with neighbours, whose bits the swap keeps).
__device__ inline void atomic_reduce(void* base, int64_t at, int32_t dtype, int itemsize, double value,
                                     Reduce reduce) {
  char* p = static_cast<char*>(base) + at * itemsize;
  if (reduce == Reduce::Sum || reduce == Reduce::Mean) {
    switch (dtype) {
      case ScalarType::Float: atomicAdd(reinterpret_cast<float*>(p), static_cast<float>(value)); return;
      case ScalarType::Double: atomicAdd(reinterpret_cast<double*>(p), value); return;
      case ScalarType::Int: atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(value)); return;
      case ScalarType::Long:
        atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(static_cast<long long>(value)));
        return;
      default: break;
    }
  }
  if (itemsize == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *word, seen;
    do {
      seen = old;
      const uint64_t next = to_bits(reduce_pair(from_bits(seen, dtype), value, reduce), dtype);
      old = atomicCAS(word, seen, static_cast<unsigned long long>(next));
    } while (old != seen);
    return;
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>(address & 3) * 8;
  const unsigned mask = itemsize == 4 ? 0xffffffffu : ((1u << (itemsize * 8)) - 1) << shift;
  unsigned old = *word, seen;
  do {
    seen = old;
    const uint64_t mine = (seen & mask) >> shift;
    const unsigned next_bits =
        static_cast<unsigned>(to_bits(reduce_pair(from_bits(mine, dtype), value, reduce), dtype)) << shift;
    old = atomicCAS(word, seen, (seen & ~mask) | (next_bits & mask));
  } while (old != seen);
}

}  // namespace ptb::builtin::kernels
