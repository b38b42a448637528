#include "robot_support.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

namespace ptb::robot_test {

std::optional<fs::path> fixtures() {
  if (const char* given = std::getenv("PTB_FIXTURES")) return fs::path(given);
  const fs::path beside = fs::path(PTB_SOURCE_DIR) / ".." / "shared" / "fixtures";
  if (fs::exists(beside / "cuda/named_sm90/model.pte")) return beside;
  const fs::path carried = fs::path(PTB_SOURCE_DIR) / ".gpu" / "fixtures";
  if (fs::exists(carried / "cuda/named_sm90/model.pte")) return carried;
  return std::nullopt;
}

std::string quote(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string()) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Command cli(const std::string& args) {
  TempDir scratch;
  const std::string command = quote(PTB_CLI_PATH) + " " + args + " >" + quote(scratch / "out") + " 2>&1";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(scratch / "out")};
}

TempDir::TempDir() {
  std::random_device random;
  path_ = fs::temp_directory_path() / ("ptb-robot-test-" + std::to_string(random()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void make_keys(const fs::path& dir, const std::string& name) {
  const fs::path key = dir / (name + "key.pem"), pub = dir / (name + "pub.pem");
  const std::string command = "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + quote(key) +
                              " 2>/dev/null && openssl pkey -in " + quote(key) + " -pubout -out " + quote(pub);
  REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "openssl could not make a P-256 key");
}

void make_bundle(const fs::path& dir, bool two_parts) {
  const fs::path source = *fixtures() / "cuda/named_sm90";
  const std::string program = quote(source / "model.pte") + "," + quote(source / "encoder.ptd");
  std::string args = "export -o " + quote(dir) + " --part encoder=" + program;
  if (two_parts) args += " --part other=" + program;
  Command made = cli(args);
  REQUIRE_MESSAGE(made.exit_code == 0, made.out);
}

void sign(const fs::path& bundle, const fs::path& key) {
  Command made = cli("sign " + quote(bundle) + " --key " + quote(key));
  REQUIRE_MESSAGE(made.exit_code == 0, made.out);
}

void flip_byte(const fs::path& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(file);
  file.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  file.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&c, 1);
}

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace ptb::robot_test
