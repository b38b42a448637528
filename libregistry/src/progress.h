// The progress line push and pull print on stderr when asked (a terminal
// without -q): one line, rewritten at most ten times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ptb::detail {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  ~ProgressLine() { done(); }
  // A callback for one blob, `label` first on the line.
  std::function<void(uint64_t, uint64_t)> track(const std::string& label);
  void done();

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ptb::detail
