// Lookup by key in O(log n) over a file's named entries (a .pte's named data,
// a .ptd's tensors). A part with per-FQN weights holds thousands of keys and
// integrity checks look each one up, so a scan per lookup made verify
// quadratic in the number of weights. A key listed twice finds its first
// entry, as the scan did.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

namespace ptb {

class KeyIndex {
 public:
  template <class Entries>
  void build(const Entries& entries) {
    order_.resize(entries.size());
    std::iota(order_.begin(), order_.end(), uint32_t{0});
    std::stable_sort(order_.begin(), order_.end(),
                     [&](uint32_t a, uint32_t b) { return entries[a].key < entries[b].key; });
  }

  template <class Entries>
  auto find(const Entries& entries, std::string_view key) const -> decltype(&entries[0]) {
    auto at = std::lower_bound(order_.begin(), order_.end(), key,
                               [&](uint32_t i, std::string_view k) { return std::string_view(entries[i].key) < k; });
    if (at == order_.end() || entries[*at].key != key) return nullptr;
    return &entries[*at];
  }

 private:
  std::vector<uint32_t> order_;  // entry indices sorted by key, stable
};

}  // namespace ptb
