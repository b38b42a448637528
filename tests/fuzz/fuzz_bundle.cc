// libFuzzer target: a bundle folder. The input is split into files of a
// scratch bundle: the first record is bundle.json, each further record is
// "<name>\n<content>" (records separated by "\n\x01\n"). A content of "|fifo"
// makes a FIFO, "->out" a symlink to a secret outside the bundle, "->dir" a
// symlink to a folder outside. Then the folder is verified (check_integrity)
// and read as a manifest. It must not crash, hang (a FIFO read), show the
// secret in a message, write outside, or print a message with a newline.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/integrity/integrity.h"

namespace fs = std::filesystem;

namespace {

fs::path make_root() {
  fs::path p = fs::temp_directory_path() / ("ptbundle-fuzz-bundle-" + std::to_string(::getpid()));
  fs::create_directories(p / "outside-dir");
  std::ofstream(p / "secret") << "FUZZ-SECRET-BYTES";
  return p;
}

const fs::path& root() {
  static const fs::path path = make_root();
  return path;
}

// Names from the input, kept inside the bundle: letters, digits and ._@-,
// one optional folder level.
std::string safe_name(std::string_view name) {
  std::string out;
  int slashes = 0;
  for (char c : name.substr(0, 64)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '@' || c == '-';
    if (c == '/' && slashes == 0 && !out.empty()) {
      ++slashes;
      out += c;
    } else if (ok) {
      out += c;
    }
  }
  if (out.empty() || out.front() == '.' || out.back() == '/' || out.find("/.") != std::string::npos) return {};
  return out;
}

void place(const fs::path& bundle, const std::string& name, std::string_view content) {
  fs::path path = bundle / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // A later record of the same name replaces the earlier one: writing
  // through a FIFO an earlier record made would block the harness itself
  // (found by the fuzzer: a "timeout" in std::ofstream's open).
  if (fs::symlink_status(path, ec).type() != fs::file_type::directory) fs::remove(path, ec);
  if (content == "|fifo") {
    ::mkfifo(path.c_str(), 0644);
  } else if (content == "->out") {
    fs::create_symlink(root() / "secret", path, ec);
  } else if (content == "->dir") {
    fs::create_directory_symlink(root() / "outside-dir", path, ec);
  } else {
    std::ofstream(path, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path bundle = root() / "bundle";
  std::error_code ec;
  fs::remove_all(bundle, ec);
  fs::create_directories(bundle);
  std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n\x01\n";
  bool first = true;
  int records = 0;
  while (records++ < 16) {
    size_t end = input.find(kSeparator);
    std::string_view record = input.substr(0, end);
    if (first) {
      place(bundle, "bundle.json", record);
      first = false;
    } else {
      size_t newline = record.find('\n');
      std::string name = safe_name(record.substr(0, newline));
      if (!name.empty() && name != "bundle.json") place(bundle, name, newline == std::string_view::npos ? "" : record.substr(newline + 1));
    }
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + kSeparator.size());
  }

  ptb::CheckList checks;
  ptb::check_integrity(bundle.string(), checks);
  for (const auto& outcome : checks.outcomes()) {
    if (outcome.message.find('\n') != std::string::npos) std::abort();
    if (outcome.message.find("FUZZ-SECRET") != std::string::npos) std::abort();
    if (outcome.message.size() > 64 * 1024) std::abort();
  }
  auto manifest = ptb::read_manifest(bundle.string());
  if (!manifest.ok() && manifest.error().message.find('\n') != std::string::npos) std::abort();
  // Nothing may have been written outside the bundle.
  if (!fs::is_empty(root() / "outside-dir")) std::abort();
  return 0;
}
