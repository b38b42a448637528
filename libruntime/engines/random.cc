// The random shims' draws (random.h) on the runtime's generator
// (random_state.h says how it keeps its state); the kernels are
// kernels/random.cu.
#include "engines/random.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "engines/random_state.h"
#include "engines/tensor.h"
#include "kernels/random.h"

namespace ptb::builtin {
namespace {

struct Generator {
  std::mutex mutex;
  uint64_t key = 0;
  std::unordered_map<int, unsigned long long*> counters;  // by device
};

Generator& generator() {
  static Generator state;
  return state;
}

// The generator's state for a draw into `out`, checked: contiguous, on the
// GPU.
Result<RandomState> state_for(const Tensor& out) {
  if (!out.is_contiguous()) return invalid("the output is not contiguous");
  if (out.storage->device_type != kDeviceCuda) return invalid("the output is not on the GPU");
  return random_state(out.storage->device_index);
}


Status fill_real(const Tensor& out, bool normal) {
  if (!is_floating_type(out.dtype) || out.itemsize() > 8 || out.itemsize() < 2) {
    return invalid(std::string(scalar_type_name(out.dtype)) + " output; expected float16, bfloat16, float32 or float64");
  }
  PTB_TRY(RandomState state, state_for(out));
  const int64_t count = out.numel();
  if (count == 0) return {};
  return cuda_checked(kernels::random_reals(out.data(), out.dtype, count, normal, state.key, state.counter,
                                        stream_for(out)));
}

}  // namespace

Status random_uniform(const Tensor& out) { return fill_real(out, false); }

Status random_normal(const Tensor& out) { return fill_real(out, true); }

Status random_integers(const Tensor& out, int64_t low, int64_t high) {
  if (high <= low) return invalid("high " + std::to_string(high) + " is not above low " + std::to_string(low));
  PTB_TRY(RandomState state, state_for(out));
  const int64_t count = out.numel();
  if (count == 0) return {};
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return cuda_checked(kernels::random_integers(out.data(), out.dtype, count, low, range, state.key, state.counter,
                                           stream_for(out)));
}

void seed_random(uint64_t seed) {
  Generator& g = generator();
  std::lock_guard lock(g.mutex);
  g.key = seed;
  for (auto& [device, counter] : g.counters) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    cudaMemset(counter, 0, sizeof *counter);
    cudaSetDevice(previous);
  }
}

Result<RandomState> random_state(int device) {
  Generator& g = generator();
  std::lock_guard lock(g.mutex);
  auto& counter = g.counters[device];
  if (!counter) {
    // Allocated at the first draw, which a graph capture never is: the
    // first call of a model runs without one.
    cudaError_t code = cudaMalloc(reinterpret_cast<void**>(&counter), sizeof *counter);
    if (code == cudaSuccess) code = cudaMemset(counter, 0, sizeof *counter);
    if (code != cudaSuccess) {
      counter = nullptr;
      return invalid(std::string("allocating the random generator's counter: ") + cudaGetErrorString(code));
    }
  }
  return RandomState{g.key, counter};
}

}  // namespace ptb::builtin

