// Statistics of timed calls, reported the way trtexec reports GPU latency:
// min, median, p90, p99, max and mean per call, calls per second, and a
// warning when the times spread so much that one figure would mislead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ptb {

struct TimingStats {
  uint64_t count = 0;
  double min_ms = 0;
  double median_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  double mean_ms = 0;
  double stddev_ms = 0;                 // population standard deviation
  double coefficient_of_variation = 0;  // stddev / mean
  double total_ms = 0;
  double calls_per_second = 0;          // count / total: back-to-back calls, not overlapped
};

// Percentiles interpolate linearly between the two nearest ranks (numpy's
// default), so p99 of 10 samples lies between the 9th and the 10th.
TimingStats summarize_timings(std::span<const double> call_ms);

// p in [0, 100] of values already sorted ascending; 0 for no values.
double percentile(std::span<const double> sorted, double p);

// A coefficient of variation above this makes the mean a poor summary: the
// GPU clocks were changing, another process shared the GPU, or the host
// thread was descheduled between calls. trtexec warns at 1% for large
// engines; calls of a few microseconds jitter more than that on any GPU, so
// we warn at 10%.
inline constexpr double kUnstableCoefficientOfVariation = 0.10;

// "times vary too much to trust the mean (coefficient of variation 23.4% >
// 10%); run more iterations, or check that nothing else uses this GPU", or
// nothing when the times are steady.
std::optional<std::string> stability_warning(const TimingStats& stats,
                                             double threshold = kUnstableCoefficientOfVariation);

}  // namespace ptb
