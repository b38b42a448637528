#include "support.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/segment_source.h"

namespace ptb::test {

namespace {

// In CI (the CI variable, which .ci/run sets and CI services set) the tests
// must be able to fail: a check that cannot run there is a broken run, not a skip.
bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}

}  // namespace

// Absent fixtures are a skip only where nobody asked for them: a folder
// named by PTB_FIXTURES that is not there, or none at all in CI, fails the
// test that needed it (every PTB_REQUIRE_FIXTURES test then fails, not passes).
std::optional<fs::path> fixtures_dir() {
  if (const char* env = std::getenv("PTB_FIXTURES")) {
    if (fs::is_directory(env)) return fs::path(env);
    FAIL_CHECK("PTB_FIXTURES=" << std::string(env) << " is not a folder; expected the fixtures (../shared/fixtures)");
    return std::nullopt;
  }
  fs::path candidate = fs::path(PTB_SOURCE_DIR) / ".." / "shared" / "fixtures";
  if (fs::is_directory(candidate)) return fs::canonical(candidate);
  if (in_ci()) FAIL_CHECK("CI is set and " << candidate.string() << " is not a folder; set PTB_FIXTURES to the fixtures");
  return std::nullopt;
}

fs::path fixture(const std::string& relative) { return *fixtures_dir() / relative; }

namespace {

// Remembers the running test's name for skip() and counts skips for the
// summary line that the listener prints at the end of the run.
std::string g_current_test;
int g_skipped = 0;
std::set<std::string> g_skipped_cases;

struct SkipListener : doctest::IReporter {
  explicit SkipListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    if (g_skipped > 0) std::printf("[ptbundle] %d test(s) skipped; see SKIPPED lines above\n", g_skipped);
    // ctest marks an entry whose every case skipped as skipped, not passed
    // (tests/tiers.cmake: SKIP_REGULAR_EXPRESSION).
    const auto ran = static_cast<std::size_t>(stats.numTestCasesPassingFilters);
    if (ran > 0 && g_skipped_cases.size() == ran && stats.numTestCasesFailed == 0)
      std::printf("[ptbundle] every test case skipped\n");
  }
  void test_case_start(const doctest::TestCaseData& data) override { g_current_test = data.m_name; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

void skip(const std::string& why) {
  ++g_skipped;
  g_skipped_cases.insert(g_current_test);
  std::printf("SKIPPED %s: %s\n", g_current_test.c_str(), why.c_str());
}

TempDir::TempDir() {
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = fs::temp_directory_path() / ("ptbundle-test-" + std::to_string(rd()));
    std::error_code ec;
    if (fs::create_directory(candidate, ec)) {
      path_ = candidate;
      return;
    }
  }
  FAIL("cannot create a temporary folder");
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string quote(const fs::path& path) {
  std::string out = "'";
  for (char c : path.string()) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

CommandResult run_cli(const std::string& args) {
  TempDir scratch;
  auto out_path = scratch / "stdout";
  auto err_path = scratch / "stderr";
  std::string command = quote(PTB_CLI_PATH) + " " + args + " >" + quote(out_path) + " 2>" + quote(err_path);
  int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out_path);
  result.err = read_text(err_path);
  return result;
}

// Without the checker a schema check proves nothing: said on a SKIPPED line,
// and in CI a failure (scripts/install-deps installs python3-jsonschema).
bool have_jsonschema() {
  static const bool found = std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") == 0;
  if (found) return true;
  const std::string why = "python3 cannot import jsonschema; install python3-jsonschema (scripts/install-deps)";
  if (in_ci()) FAIL_CHECK("CI is set and the JSON Schema check cannot run: " << why);
  else skip("its JSON Schema check: " + why);
  return false;
}

std::string schema_problem(const std::string& schema, const std::string& document) {
  TempDir scratch;
  const fs::path schemas = fs::path(PTB_SOURCE_DIR) / "schemas";
  {
    std::ofstream(scratch / "document.json") << document;
  }
  std::string command = "python3 " + quote(fs::path(PTB_SOURCE_DIR) / "tests/validate_schema.py") + " " +
                        quote(schemas / (schema + ".schema.json")) + " " + quote(scratch / "document.json") + " " +
                        quote(schemas / "error.schema.json") + " " + quote(schemas / "bundle.schema.json") + " " +
                        quote(schemas / "verify.schema.json") + " 2>" +
                        quote(scratch / "problem");
  if (std::system(command.c_str()) == 0) return "";
  std::string problem = read_text(scratch / "problem");
  return problem.empty() ? "the validator failed" : problem;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void flip_byte(const fs::path& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  file.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&c, 1);
  REQUIRE(file.good());
}

void rewrite_manifest_digests(const fs::path& bundle) {
  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  for (auto& part : manifest->parts) {
    for (auto& file : part.files) {
      auto digest = sha256_file((bundle / file.path).string());
      REQUIRE(digest.ok());
      file.sha256 = *digest;
      file.size = fs::file_size(bundle / file.path);
    }
  }
  REQUIRE(write_manifest(bundle.string(), *manifest).ok());
}

}  // namespace ptb::test

DOCTEST_REGISTER_LISTENER("ptbundle-skips", 1, ptb::test::SkipListener);
