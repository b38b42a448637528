// The loop of a race test (tests/test_hostile.cc, tests/test_locks.cc): a few
// rounds in CI; scripts/race-loops sets PTB_RACE_ROUNDS (1,000) and
// PTB_RACE_SECONDS (the bound on each test's time), and reads the "[race]"
// line each loop prints. Delays are random but seeded, so a failing round can
// be replayed.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <utility>

namespace ptb::test {

class RaceLoop {
 public:
  RaceLoop(std::string name, int ci_rounds)
      : name_(std::move(name)),
        rounds_(env_count("PTB_RACE_ROUNDS", ci_rounds)),
        start_(std::chrono::steady_clock::now()),
        deadline_(start_ + std::chrono::seconds(env_count("PTB_RACE_SECONDS", 600))) {}
  ~RaceLoop() {
    if (std::getenv("PTB_RACE_ROUNDS")) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::string outcomes;
      for (const auto& [outcome, count] : outcomes_) outcomes += (outcomes.empty() ? "; " : ", ") + outcome + " " + std::to_string(count);
      std::printf("[race] %s: %d of %d rounds in %.1f s%s\n", name_.c_str(), done_, rounds_, seconds, outcomes.c_str());
    }
  }
  bool next() {
    if (done_ >= rounds_ || std::chrono::steady_clock::now() > deadline_) return false;
    ++done_;
    return true;
  }
  int round() const { return done_ - 1; }
  // How rounds ended, tallied for the summary line.
  void outcome(const std::string& what) { ++outcomes_[what]; }
  // Uniform in [0, max).
  std::chrono::microseconds delay(std::chrono::microseconds max) {
    return std::chrono::microseconds(random_() % static_cast<uint64_t>(max.count()));
  }

 private:
  static int env_count(const char* name, int fallback) {
    const char* text = std::getenv(name);
    return text && std::atoi(text) > 0 ? std::atoi(text) : fallback;
  }
  std::string name_;
  int rounds_;
  int done_ = 0;
  std::chrono::steady_clock::time_point start_, deadline_;
  std::mt19937_64 random_{22};
  std::map<std::string, int> outcomes_;
};

}  // namespace ptb::test
