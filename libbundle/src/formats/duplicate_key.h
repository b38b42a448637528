// The first two entries of a file's named entries (a .pte's named data, a
// .ptd's tensors) that share a key. Readers refuse such a file: a loader and
// a check taking different entries of one key would see different bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

namespace ptb::detail {

// Indices (in file order) of the first entry whose key an earlier entry
// already has, and of that earlier entry; nullopt when every key is unique.
template <class Entries>
std::optional<std::pair<uint32_t, uint32_t>> first_duplicate_key(const Entries& entries) {
  std::map<std::string_view, uint32_t> seen;
  for (uint32_t i = 0; i < entries.size(); ++i) {
    auto [at, added] = seen.try_emplace(std::string_view(entries[i].key), i);
    if (!added) return std::pair<uint32_t, uint32_t>{at->second, i};
  }
  return std::nullopt;
}

}  // namespace ptb::detail
