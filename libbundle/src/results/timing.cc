#include "ptbundle/results/timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace ptb {

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0;
  const double clamped = std::clamp(p, 0.0, 100.0);
  const double rank = clamped / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

TimingStats summarize_timings(std::span<const double> call_ms) {
  TimingStats stats;
  if (call_ms.empty()) return stats;
  std::vector<double> sorted(call_ms.begin(), call_ms.end());
  std::sort(sorted.begin(), sorted.end());
  stats.count = sorted.size();
  stats.min_ms = sorted.front();
  stats.max_ms = sorted.back();
  stats.median_ms = percentile(sorted, 50);
  stats.p90_ms = percentile(sorted, 90);
  stats.p99_ms = percentile(sorted, 99);
  for (double value : sorted) stats.total_ms += value;
  stats.mean_ms = stats.total_ms / static_cast<double>(stats.count);
  double squares = 0;
  for (double value : sorted) squares += (value - stats.mean_ms) * (value - stats.mean_ms);
  stats.stddev_ms = std::sqrt(squares / static_cast<double>(stats.count));
  stats.coefficient_of_variation = stats.mean_ms > 0 ? stats.stddev_ms / stats.mean_ms : 0;
  stats.calls_per_second = stats.total_ms > 0 ? static_cast<double>(stats.count) * 1000.0 / stats.total_ms : 0;
  return stats;
}

std::optional<std::string> stability_warning(const TimingStats& stats, double threshold) {
  if (stats.count < 2 || stats.coefficient_of_variation <= threshold) return std::nullopt;
  char text[200];
  std::snprintf(text, sizeof text,
                "times vary too much to trust the mean (coefficient of variation %.1f%% > %.0f%%); "
                "run more iterations, or check that nothing else uses this GPU",
                stats.coefficient_of_variation * 100, threshold * 100);
  return std::string(text);
}

}  // namespace ptb
