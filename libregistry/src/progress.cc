#include "progress.h"

#include <cstdio>

#include "ptbundle/base/text.h"

namespace ptb::detail {

std::function<void(uint64_t, uint64_t)> ProgressLine::track(const std::string& label) {
  if (!enabled_) return {};
  return [this, label = clipped(label, 60)](uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\r\033[K%s: %.1f / %.1f MiB", label.c_str(), static_cast<double>(done) / (1 << 20),
                 static_cast<double>(total) / (1 << 20));
    std::fflush(stderr);
  };
}

void ProgressLine::done() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace ptb::detail
