// The CLI's one progress line: what a long command is doing, on stderr, for
// the person watching a terminal. The libraries report through
// ptbundle/base/progress.h's Progress; this draws it:
//   hashing bundle/: 1.2 GiB of 4.0 GiB (30%), 850.0 MiB/s, 3 s left
// rewritten in place ("\r" and erase-line) at most ten times a second, once
// the command has run half a second (a quick command draws nothing), and
// erased before anything else is written to stderr (Output clears it).
// Never on stdout, never when stderr is not a terminal, never with -q.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "ptbundle/base/progress.h"

namespace ptb::app {

class ProgressLine {
 public:
  // `shown`: whether to draw at all (a terminal on stderr, no -q).
  explicit ProgressLine(bool shown);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The callback to hand the libraries; empty when nothing is drawn, so
  // that they skip the reporting.
  Progress callback();
  // Erases the line, when one is drawn.
  void clear();

 private:
  void update(uint64_t done, uint64_t total, const std::string& what);

  using Clock = std::chrono::steady_clock;
  const bool shown_;
  std::mutex mutex_;
  const Clock::time_point created_ = Clock::now();
  Clock::time_point drawn_at_{};
  bool drawn_ = false;
  // The step being shown: a new `what` or total starts a new one.
  std::string what_;
  uint64_t total_ = 0;
  Clock::time_point step_start_{};
};

// Whether stderr is a terminal, where a progress line belongs.
bool stderr_is_terminal();

// The test seam (tests/seams/): every update drawn at once, with no wait
// for the first and no limit of ten a second, so that a test's small files
// show a line. Nothing in `ptbundle` calls it.
void set_progress_every_update(bool every);

}  // namespace ptb::app
