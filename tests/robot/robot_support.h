// What the robot API's tests share: bundles made with the ptbundle command
// from ExecuTorch's named_sm90 export (../shared/fixtures), keys made with
// the openssl command, files tampered with after signing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ptb::robot_test {
namespace fs = std::filesystem;

std::optional<fs::path> fixtures();
std::string quote(const fs::path& path);

struct Command {
  int exit_code = 0;
  std::string out;
};
// The ptbundle command with `args`; stdout and stderr together in `out`.
Command cli(const std::string& args);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// A P-256 key pair (key.pem, pub.pem) in `dir`, prefixed by `name`.
void make_keys(const fs::path& dir, const std::string& name);
// A bundle of parts "encoder" and, with two_parts, "other" (the same
// program), exported from named_sm90.
void make_bundle(const fs::path& dir, bool two_parts = false);
void sign(const fs::path& bundle, const fs::path& key);
void flip_byte(const fs::path& path, uint64_t offset);
std::string read_text(const fs::path& path);
bool contains(const std::string& text, const std::string& part);

}  // namespace ptb::robot_test

#define PTB_ROBOT_FIXTURES()                                                                 \
  do {                                                                                       \
    if (!::ptb::robot_test::fixtures()) {                                                    \
      MESSAGE("SKIPPED: no fixtures (../shared/fixtures or $PTB_FIXTURES): the bundles are " \
              "exported from ExecuTorch's named_sm90 export");                               \
      return;                                                                                \
    }                                                                                        \
  } while (0)
