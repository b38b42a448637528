// The state of the runtime's random shims (rand, randn, randint): a
// counter-based generator (Philox4x32-10) keyed by the load's seed, whose
// counter lives in GPU memory. Each draw reads the counter on the GPU and
// a one-thread kernel after it moves the counter on, so that a CUDA graph
// replaying the draws gets new numbers every time, and the same seed gives
// the same sequence of draws.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::builtin {

// Sets the key for every later draw and puts the counter back to 0; the
// counter's memory is allocated here, not during a graph capture.
void seed_random(uint64_t seed);

struct RandomState {
  uint64_t key = 0;
  unsigned long long* counter = nullptr;  // on the GPU
};

// The state for draws on `device`.
Result<RandomState> random_state(int device);

}  // namespace ptb::builtin
