#include "ptbundle/base/progress.h"

#include <algorithm>

namespace ptb {

std::function<void(uint64_t, uint64_t)> progress_step(const Progress& progress, std::string what) {
  if (!progress) return {};
  return [&progress, what = std::move(what)](uint64_t done, uint64_t total) { progress(done, total, what); };
}

void ProgressCounter::add(uint64_t bytes) {
  const uint64_t done = done_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (!progress_) return;
  // A thread that finds another reporting skips its call: the next one
  // carries its bytes too. The last bytes always get through, so that the
  // step is seen to finish.
  if (done < total_) {
    std::unique_lock lock(calling_, std::try_to_lock);
    if (lock.owns_lock()) progress_(done_.load(std::memory_order_relaxed), total_, what_);
    return;
  }
  std::lock_guard lock(calling_);
  progress_(std::min(done_.load(std::memory_order_relaxed), total_), total_, what_);
}

}  // namespace ptb
