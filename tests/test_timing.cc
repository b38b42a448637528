#include <vector>

#include "ptbundle/cuda/runner.h"
#include "ptbundle/results/timing.h"
#include "support.h"

using namespace ptb;

TEST_CASE("timing: min, median, p90, p99, max, mean and calls per second") {
  std::vector<double> ms{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};  // order does not matter
  TimingStats stats = summarize_timings(ms);
  CHECK(stats.count == 10);
  CHECK(stats.min_ms == 1);
  CHECK(stats.max_ms == 10);
  CHECK(stats.median_ms == doctest::Approx(5.5));
  CHECK(stats.p90_ms == doctest::Approx(9.1));   // rank 8.1 between 9 and 10
  CHECK(stats.p99_ms == doctest::Approx(9.91));  // rank 8.91
  CHECK(stats.mean_ms == doctest::Approx(5.5));
  CHECK(stats.total_ms == doctest::Approx(55));
  CHECK(stats.calls_per_second == doctest::Approx(10 / 0.055));
  CHECK(stats.stddev_ms == doctest::Approx(2.8722813));  // population: sqrt(8.25)
  CHECK(stats.coefficient_of_variation == doctest::Approx(2.8722813 / 5.5));
}

TEST_CASE("timing: percentiles at the ends and of one sample") {
  std::vector<double> sorted{2, 4};
  CHECK(percentile(sorted, 0) == 2);
  CHECK(percentile(sorted, 100) == 4);
  CHECK(percentile(sorted, 50) == 3);
  CHECK(percentile(sorted, 150) == 4);  // clamped
  std::vector<double> one{0.25};
  TimingStats stats = summarize_timings(one);
  CHECK(stats.median_ms == 0.25);
  CHECK(stats.p99_ms == 0.25);
  CHECK(stats.coefficient_of_variation == 0);
  CHECK(stats.calls_per_second == doctest::Approx(4000));
  CHECK_FALSE(stability_warning(stats).has_value());  // one sample says nothing about spread
  CHECK(summarize_timings({}).count == 0);
  CHECK(percentile({}, 50) == 0);
}

TEST_CASE("timing: a warning when the coefficient of variation is high") {
  std::vector<double> steady(100, 0.020);
  steady[3] = 0.021;
  TimingStats calm = summarize_timings(steady);
  CHECK(calm.coefficient_of_variation < 0.01);
  CHECK_FALSE(stability_warning(calm).has_value());

  // Half the calls twice as slow: mean 0.03, stddev 0.01, CV 33.3%.
  std::vector<double> bimodal;
  for (int i = 0; i < 50; ++i) {
    bimodal.push_back(0.02);
    bimodal.push_back(0.04);
  }
  TimingStats noisy = summarize_timings(bimodal);
  CHECK(noisy.coefficient_of_variation == doctest::Approx(1.0 / 3));
  auto warning = stability_warning(noisy);
  REQUIRE(warning.has_value());
  CHECK(*warning ==
        "times vary too much to trust the mean (coefficient of variation 33.3% > 10%); "
        "run more iterations, or check that nothing else uses this GPU");
  CHECK_FALSE(stability_warning(noisy, 0.5).has_value());
}

TEST_CASE("timing: the load breakdown and its upload rate") {
  LoadTimes load;
  CHECK(load.upload_gb_per_second() == 0);
  load.read_ms = 1;
  load.library_ms = 2;
  load.create_ms = 3;
  load.weights_ms = 500;
  load.weight_bytes = 12'000'000'000ull;
  CHECK(load.total_ms() == 506);
  CHECK(load.upload_gb_per_second() == doctest::Approx(24.0));
}
