#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "report.h"

namespace ptb::app {
namespace {

std::atomic<bool> every_update{false};

constexpr auto kFirstAfter = std::chrono::milliseconds(500);
constexpr auto kAtMostEvery = std::chrono::milliseconds(100);

// Columns of the terminal on stderr; a line that wrapped could not be
// rewritten in place.
size_t terminal_width() {
  struct winsize size {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

std::string duration_text(double seconds) {
  const auto whole = static_cast<uint64_t>(seconds + 0.5);
  if (whole < 60) return std::to_string(whole) + " s";
  if (whole < 3600) return std::to_string(whole / 60) + " min " + std::to_string(whole % 60) + " s";
  return std::to_string(whole / 3600) + " h " + std::to_string(whole % 3600 / 60) + " min";
}

}  // namespace

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void set_progress_every_update(bool every) { every_update.store(every); }

ProgressLine::ProgressLine(bool shown) : shown_(shown) {}

Progress ProgressLine::callback() {
  if (!shown_) return {};
  return [this](uint64_t done, uint64_t total, const std::string& what) { update(done, total, what); };
}

void ProgressLine::update(uint64_t done, uint64_t total, const std::string& what) {
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  if (what != what_ || total != total_) {
    what_ = what;
    total_ = total;
    step_start_ = now;
  }
  if (!every_update.load(std::memory_order_relaxed)) {
    if (now - created_ < kFirstAfter) return;
    if (drawn_ && now - drawn_at_ < kAtMostEvery) return;
  }
  drawn_at_ = now;
  if (done > total) done = total;

  std::string figures = ": " + human_size(done);
  if (total > 0) {
    figures += " of " + human_size(total) + " (" + std::to_string(static_cast<int>(100.0 * static_cast<double>(done) /
                                                                                   static_cast<double>(total))) + "%)";
  }
  const double seconds = std::chrono::duration<double>(now - step_start_).count();
  if (seconds >= 0.2 && done > 0) {
    const double rate = static_cast<double>(done) / seconds;
    figures += ", " + human_size(static_cast<uint64_t>(rate)) + "/s";
    if (total > done) figures += ", " + duration_text(static_cast<double>(total - done) / rate) + " left";
  }
  // The whole line inside the terminal's width, the name cut first.
  const size_t width = terminal_width() - 1;
  std::string label = printable(what);
  if (label.size() + figures.size() > width) {
    const size_t room = width > figures.size() + 4 ? width - figures.size() - 3 : 0;
    label = label.substr(0, room) + "...";
  }
  std::string line = label + figures;
  if (line.size() > width) line.resize(width);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  std::lock_guard lock(mutex_);
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace ptb::app
