// The random shims' draws (random.cu): `count` values into the contiguous
// GPU memory at `out` from Philox4x32-10 keyed by `seed`, starting at the
// counter the GPU holds at `counter`, which a one-thread kernel then moves
// on by `count`. Both launch in order on `stream`; the launches' error is
// returned.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ptb::builtin::kernels {

// Uniform in [0, 1), or standard normal (Box-Muller) with `normal`; dtype
// float16, bfloat16, float32 or float64.
cudaError_t random_reals(void* out, int32_t dtype, int64_t count, bool normal, uint64_t seed,
                         unsigned long long* counter, cudaStream_t stream);

// low + a draw in [0, range), the range unsigned so that Inductor's seed
// draw (low = INT64_MIN, high = INT64_MAX) does not overflow; any integer
// or floating dtype.
cudaError_t random_integers(void* out, int32_t dtype, int64_t count, int64_t low, uint64_t range, uint64_t seed,
                            unsigned long long* counter, cudaStream_t stream);

}  // namespace ptb::builtin::kernels
