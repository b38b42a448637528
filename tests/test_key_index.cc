#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ptbundle/formats/key_index.h"

namespace {
struct Entry {
  std::string key;
  int value = 0;
};
}  // namespace

TEST_CASE("key index: finds each key, the first of a key listed twice, nothing for a missing key") {
  const std::vector<Entry> entries = {{"w.b", 0}, {"a", 1}, {"w.a", 2}, {"a", 3}, {"", 4}};
  ptb::KeyIndex index;
  index.build(entries);
  CHECK(index.find(entries, "w.b")->value == 0);
  CHECK(index.find(entries, "w.a")->value == 2);
  CHECK(index.find(entries, "a")->value == 1);  // the first, as a scan finds it
  CHECK(index.find(entries, "")->value == 4);
  CHECK(index.find(entries, "b") == nullptr);
  CHECK(index.find(entries, "w") == nullptr);
  CHECK(index.find(entries, "zzz") == nullptr);
  const std::vector<Entry> none;
  ptb::KeyIndex empty;
  empty.build(none);
  CHECK(empty.find(none, "a") == nullptr);
}
