// Tests that can fail: a test that needs the fixtures or the JSON Schema
// checker fails, rather than passes as skipped, where they were asked for
// (PTB_FIXTURES) or are owed (CI). This binary runs one of its own tests as a
// child under each condition.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support.h"

using ptb::test::contains;
using ptb::test::quote;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Child {
  int exit_code = -1;
  std::string output;
};

// This test binary, with `env` before it and only the tests matching `filter`.
Child run_self(const std::string& env, const std::string& filter, const TempDir& scratch) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path log = scratch / "log";
  const std::string command = "env " + env + " " + quote(self) + " --no-intro=true " + quote("-tc=" + filter) + " >" +
                              quote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, ptb::test::read_text(log)};
}


}  // namespace

TEST_CASE("can fail: fixtures named by PTB_FIXTURES but absent fail the tests that need them") {
  TempDir scratch;
  const std::string missing = (scratch / "no-fixtures").string();
  auto child = run_self("PTB_FIXTURES=" + quote(missing), "bundle open: file kinds*", scratch);
  CHECK_MESSAGE(child.exit_code != 0, child.output);
  CHECK_MESSAGE(contains(child.output, "PTB_FIXTURES=" + missing + " is not a folder"), child.output);
}

TEST_CASE("can fail: without the JSON Schema checker, schema checks fail in CI and say they skipped elsewhere") {
  TempDir scratch;
  // A jsonschema module that cannot be imported, ahead of the real one.
  fs::create_directories(scratch / "python");
  std::ofstream(scratch / "python" / "jsonschema.py") << "raise ImportError('hidden by test_can_fail')\n";
  const std::string hidden = "PYTHONPATH=" + quote(scratch / "python");
  const std::string test = "cli --json: failed checks are the report*";

  auto in_ci = run_self("CI=1 " + hidden, test, scratch);
  CHECK_MESSAGE(in_ci.exit_code != 0, in_ci.output);
  CHECK_MESSAGE(contains(in_ci.output, "the JSON Schema check cannot run: python3 cannot import jsonschema"), in_ci.output);

  auto here = run_self("-u CI " + hidden, test, scratch);
  CHECK_MESSAGE(here.exit_code == 0, here.output);
  CHECK_MESSAGE(contains(here.output, "SKIPPED"), here.output);
  CHECK_MESSAGE(contains(here.output, "install python3-jsonschema"), here.output);
}
