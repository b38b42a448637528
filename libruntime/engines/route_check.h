// Choosing between two ways of computing one shim's result (a convolution
// on cuDNN or as a GEMM; an int4 product directly or through bfloat16
// weights on cuBLASLt): the first time a shape is seen, outside any CUDA
// graph capture, both run on the real operands, timed, and the faster is
// taken only when its result agrees with the other's. A way that never ran
// on this GPU model before can then cost a search, never a wrong result.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <optional>

#include "kernels/kernels.h"
#include "engines/tensor.h"

namespace ptb::builtin {

// How a search times its candidates. On the GPU: the repetitions are queued
// behind a kernel that waits (kernels::hold) long enough for the host to
// launch them all, so they meet the GPU back to back. As launched, runs are
// host-bound wherever launching costs more than the GPU's work (a small
// product, or any run under a CUDA tracer). Candidates compared with each
// other are timed on the GPU (cuBLASLt's, the int4 ways); the convolution's
// GEMM route and channels-last detour are compared with cuDNN's plans, which
// are timed as launched, and are timed so too, since a route timed on the GPU
// against plans timed as launched would win where it is slower.
enum class Timing { gpu, as_launched };

// The mean time of `run` on `stream` over a few repetitions, after one; -1
// when the events fail.
template <typename Run>
float mean_ms(cudaStream_t stream, Timing timing, Run run) {
  constexpr int kRepetitions = 5;
  constexpr uint32_t kHoldNs = 300000;  // 5 launches of up to 60 us of host time each
  run();
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  if (timing == Timing::gpu) kernels::hold(stream, kHoldNs);
  cudaEventRecord(start, stream);
  for (int i = 0; i < kRepetitions; ++i) run();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float total = 0;
  if (cudaEventElapsedTime(&total, start, stop) != cudaSuccess) total = -1;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGetLastError();
  return total < 0 ? -1 : total / kRepetitions;
}

// How far a candidate's result is from a reference's: the largest
// element-wise difference and the largest |reference| value.
struct Agreement {
  double difference = 0, largest = 0;
  bool within(double relative) const { return difference <= relative * (largest > 1e-30 ? largest : 1e-30); }
};

// Both tensors (one shape, any dtypes) read back to the host as float64,
// which waits for their streams; nullopt when they cannot be read.
std::optional<Agreement> compare(const Tensor& candidate, const Tensor& reference);

// What each shape's first call chose, for one shim: true where the new way
// serves. Kept for the process, as the plans of cuBLASLt and cuDNN are:
// they outlive every model.
template <class Shape>
struct RouteChoices {
  std::mutex mutex;
  std::map<Shape, bool> chosen;
  static RouteChoices& process() {
    static RouteChoices* kept = new RouteChoices;
    return *kept;
  }
};

// Whether `stream` is capturing a CUDA graph: no search may run then.
bool capturing(cudaStream_t stream);

// PTBUNDLE_TRACE_SHIMS (settings.h): each search's candidates and each choice of way on
// stderr, for the speed work (there is no profiler on every GPU machine).
bool tracing();

}  // namespace ptb::builtin
