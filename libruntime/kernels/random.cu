// The random shims' kernels (random.h): Philox4x32-10 draws whose counter
// lives in GPU memory (engines/random_state.h says why).
#include "kernels/random.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "ptbundle/base/dtype.h"

namespace ptb::builtin::kernels {
namespace {

struct Keys {
  uint32_t k0, k1;
};

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): four 32-bit words of counter, two of key.
__device__ uint4 philox(uint4 counter, Keys key) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * counter.x;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * counter.z;
    counter = make_uint4(static_cast<uint32_t>(p1 >> 32) ^ counter.y ^ key.k0, static_cast<uint32_t>(p1),
                         static_cast<uint32_t>(p0 >> 32) ^ counter.w ^ key.k1, static_cast<uint32_t>(p0));
    key.k0 += 0x9E3779B9u;
    key.k1 += 0xBB67AE85u;
  }
  return counter;
}

// Four words for element `index` of the draw starting at `base`.
__device__ uint4 words(uint64_t seed, unsigned long long base, uint64_t index) {
  const uint64_t n = base + index;
  return philox(make_uint4(static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32), 0, 0),
                Keys{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// (0, 1]: never 0, so that log() in Box-Muller is finite.
__device__ double unit(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ lo;
  return (static_cast<double>(bits & ((1ull << 53) - 1)) + 1.0) / 9007199254740992.0;
}

template <class T>
__device__ void put(void* out, int64_t at, double value) {
  static_cast<T*>(out)[at] = static_cast<T>(value);
}

__device__ void put_real(void* out, int64_t at, int32_t dtype, double value) {
  switch (dtype) {
    case ScalarType::Half: static_cast<__half*>(out)[at] = __float2half_rn(static_cast<float>(value)); break;
    case ScalarType::BFloat16: static_cast<__nv_bfloat16*>(out)[at] = __float2bfloat16_rn(static_cast<float>(value)); break;
    case ScalarType::Double: put<double>(out, at, value); break;
    default: put<float>(out, at, value); break;
  }
}

// Reads the counter at its start; draw_done moves it on afterwards.
__global__ void draw_real(void* out, int32_t dtype, int64_t count, bool normal, uint64_t seed,
                          const unsigned long long* counter) {
  const unsigned long long base = *counter;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 w = words(seed, base, static_cast<uint64_t>(i));
    double value = unit(w.x, w.y);
    if (normal) value = sqrt(-2.0 * log(value)) * cospi(2.0 * unit(w.z, w.w));
    else value = 1.0 - value;  // [0, 1)
    put_real(out, i, dtype, value);
  }
}

// low + a draw in [0, high - low), the range taken as unsigned so that
// Inductor's seed draw (low = INT64_MIN, high = INT64_MAX) does not overflow.
__global__ void draw_integers(void* out, int32_t dtype, int64_t count, int64_t low, uint64_t range, uint64_t seed,
                              const unsigned long long* counter) {
  const unsigned long long base = *counter;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 w = words(seed, base, static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(w.x) << 32) | w.y;
    const int64_t value = static_cast<int64_t>(static_cast<uint64_t>(low) + (range ? bits % range : bits));
    switch (dtype) {
      case ScalarType::Int: static_cast<int32_t*>(out)[i] = static_cast<int32_t>(value); break;
      case ScalarType::Short: static_cast<int16_t*>(out)[i] = static_cast<int16_t>(value); break;
      case ScalarType::Char: static_cast<int8_t*>(out)[i] = static_cast<int8_t>(value); break;
      case ScalarType::Byte: static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(value); break;
      case ScalarType::Float: case ScalarType::Double: case ScalarType::Half: case ScalarType::BFloat16:
        put_real(out, i, dtype, static_cast<double>(value));
        break;
      default: static_cast<int64_t*>(out)[i] = value; break;
    }
  }
}

__global__ void draw_done(unsigned long long* counter, unsigned long long used) { *counter += used; }

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

}  // namespace

cudaError_t random_reals(void* out, int32_t dtype, int64_t count, bool normal, uint64_t seed,
                         unsigned long long* counter, cudaStream_t stream) {
  draw_real<<<blocks_for(count), kThreads, 0, stream>>>(out, dtype, count, normal, seed, counter);
  draw_done<<<1, 1, 0, stream>>>(counter, static_cast<unsigned long long>(count));
  return cudaGetLastError();
}

cudaError_t random_integers(void* out, int32_t dtype, int64_t count, int64_t low, uint64_t range, uint64_t seed,
                            unsigned long long* counter, cudaStream_t stream) {
  draw_integers<<<blocks_for(count), kThreads, 0, stream>>>(out, dtype, count, low, range, seed, counter);
  draw_done<<<1, 1, 0, stream>>>(counter, static_cast<unsigned long long>(count));
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels
