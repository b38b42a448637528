// How a long operation (a copy, a hash, a transfer) tells its caller how far
// it is. The libraries only report; the CLI decides whether and how to show it
// (apps/progress.h: a line on a terminal's stderr).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace ptb {

// `done` of `total` bytes of one step, which `what` names for people
// ("hashing BUNDLE", "writing FILE"); a new `what` or `total` is a new step.
// Calls never overlap (ProgressCounter serializes threads). Empty: nobody
// asked, and the operation skips the reporting.
using Progress = std::function<void(uint64_t done, uint64_t total, const std::string& what)>;

// `progress` as a callback of one step's bytes (done, total), for code that
// counts the bytes of one thing (a transfer); empty when `progress` is.
std::function<void(uint64_t done, uint64_t total)> progress_step(const Progress& progress, std::string what);

// One step's bytes as several threads add them, passed on to a Progress one
// call at a time. With an empty Progress, add() costs an atomic add.
class ProgressCounter {
 public:
  ProgressCounter(const Progress& progress, uint64_t total, std::string what)
      : progress_(progress), total_(total), what_(std::move(what)) {}
  ProgressCounter(const ProgressCounter&) = delete;
  ProgressCounter& operator=(const ProgressCounter&) = delete;

  void add(uint64_t bytes);

 private:
  const Progress& progress_;
  const uint64_t total_;
  const std::string what_;
  std::atomic<uint64_t> done_{0};
  std::mutex calling_;
};

}  // namespace ptb
