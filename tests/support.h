// Shared by the tests: where the real fixtures are, scratch folders, running
// the ptbundle binary. Tests that need something absent print one line
// "SKIPPED <test>: <what is missing>" and return, so a run without
// ../shared/fixtures (a user's fresh clone) still passes and says why.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ptb::test {

namespace fs = std::filesystem;

// ../shared/fixtures beside the source tree, or PTB_FIXTURES if set.
std::optional<fs::path> fixtures_dir();
fs::path fixture(const std::string& relative);  // requires fixtures_dir()

void skip(const std::string& why);

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the built ptbundle binary with `args` (already shell-quoted as needed).
CommandResult run_cli(const std::string& args);

std::string read_text(const fs::path& path);
// The bytes of a file; REQUIREs that it opens.
std::vector<uint8_t> read_bytes(const fs::path& path);

// Whether python3 with the jsonschema module is here (the schema checks skip without it).
bool have_jsonschema();
// Checks `document` (the text of one JSON document) against schemas/<schema>.schema.json, with
// the schemas it refers to (error, bundle), through tests/validate_schema.py: empty when valid,
// otherwise the validator's message.
std::string schema_problem(const std::string& schema, const std::string& document);
std::string quote(const fs::path& path);
bool contains(const std::string& text, const std::string& part);
// The byte at `offset` XORed with 0x5a, in place; REQUIREs the write.
void flip_byte(const fs::path& path, uint64_t offset);
// bundle.json's digests and sizes made to match the files as they are now:
// what an attacker who changed a file would do.
void rewrite_manifest_digests(const fs::path& bundle);

}  // namespace ptb::test

#define PTB_REQUIRE_FIXTURES()                                                          \
  do {                                                                                  \
    if (!::ptb::test::fixtures_dir()) {                                                 \
      ::ptb::test::skip("../shared/fixtures not found (set PTB_FIXTURES to its path)"); \
      return;                                                                           \
    }                                                                                   \
  } while (0)
