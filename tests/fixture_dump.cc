#include "fixture_dump.h"

#include <algorithm>

namespace ptb::test {

std::vector<fs::path> cuda_fixture_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(fixture("cuda"))) {
    if (entry.is_directory() && fs::exists(entry.path() / "dump.json")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(read_text(path)); }

}  // namespace ptb::test
