// The CLI's contract with pipelines: with --json every command prints exactly
// one JSON document on stdout, on failure too (schemas/error.schema.json),
// with format_version, the command and the exit code; command-line errors are
// "ptbundle: error:" lines that name the command.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support.h"

namespace {

using nlohmann::ordered_json;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;


// Parses stdout as exactly one document (parse() rejects anything after it)
// and checks the envelope every document carries.
ordered_json one_document(const ptb::test::CommandResult& result, const std::string& command) {
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  ordered_json document;
  REQUIRE_NOTHROW(document = ordered_json::parse(result.out));
  REQUIRE(document.is_object());
  CHECK(document.begin().key() == "format_version");
  CHECK(document["format_version"] == 1);
  if (command.empty()) CHECK(document["command"].is_null());
  else CHECK(document["command"] == command);
  CHECK(document["exit_code"] == result.exit_code);
  CHECK((--document.end()).key() == "exit_code");
  return document;
}

// A failure before any report: the error document, its schema, and the same
// message on stderr.
void check_error_document(const ptb::test::CommandResult& result, const std::string& command, const std::string& schema,
                          int exit_code, const std::string& kind) {
  CHECK(result.exit_code == exit_code);
  ordered_json document = one_document(result, command);
  REQUIRE(document["errors"].size() >= 1);
  CHECK(document["errors"][0]["kind"] == kind);
  CHECK(contains(result.err, "ptbundle: error: "));
  CHECK(contains(result.err, document["errors"][0]["message"].get<std::string>()));
  if (ptb::test::have_jsonschema()) {
    CHECK_MESSAGE(ptb::test::schema_problem(schema, result.out) == "", result.out);
    CHECK_MESSAGE(ptb::test::schema_problem("error", result.out) == "", result.out);
  }
}

}  // namespace

TEST_CASE("cli --json: a bad command line gives one error document for every command") {
  struct Case {
    const char* command;
    const char* args;
  };
  for (const Case& c : {Case{"export", "--json --part x=a.pte"}, Case{"merge", "--json --no-such-flag"},
                        Case{"verify", "--json"}, Case{"inspect", "--json --no-such-flag x.pte"},
                        Case{"run", "--json --iterations many x"}, Case{"gpus", "--json --no-such-flag"},
                        Case{"push", "--json --chunk-size lots b r.io/x:1"}, Case{"pull", "--json r.io/x:1"}}) {
    CAPTURE(c.command);
    auto result = run_cli(std::string(c.command) + " " + c.args);
    check_error_document(result, c.command, c.command, 2, "usage");
    CHECK(contains(result.err, std::string("ptbundle: error: ") + c.command + ": "));
    CHECK(contains(result.err, std::string("; see ptbundle ") + c.command + " --help"));
  }
}

TEST_CASE("cli --json: a command that fails gives one document with the error and the exit code") {
  TempDir dir;
  // I/O: the input does not exist.
  auto exported = run_cli("export --json -o " + quote(dir.path() / "bundle") + " --part x=" + quote(dir.path() / "nope.pte"));
  check_error_document(exported, "export", "export", 3, "io");
  auto merged = run_cli("merge --json -o " + quote(dir.path() / "m.pte") + " " + quote(dir.path() / "a.pte") + " " + quote(dir.path() / "b.pte"));
  CHECK(merged.exit_code != 0);
  check_error_document(merged, "merge", "merge", merged.exit_code, merged.exit_code == 3 ? "io" : "invalid");
  // Usage: a request that cannot be met.
  auto verified = run_cli("verify --json --gpu sm_90a " + quote(dir.path()));
  check_error_document(verified, "verify", "verify", 2, "usage");
  auto ran = run_cli("run --json " + quote(dir.path() / "nope.pte") + " --iterations 0");
  CHECK(ran.exit_code != 0);
  check_error_document(ran, "run", "run", ran.exit_code, ran.exit_code == 2 ? "usage" : ran.exit_code == 3 ? "io" : "invalid");
}

TEST_CASE("cli --json: failed checks are the report, with its exit code") {
  TempDir dir;
  // A folder without bundle.json: verify fails its checks, inspect fails the path.
  auto verified = run_cli("verify --json --gpu none " + quote(dir.path()));
  CHECK(verified.exit_code == 1);
  ordered_json report = one_document(verified, "verify");
  CHECK(report["ok"] == false);
  auto inspected = run_cli("inspect --json " + quote(dir.path() / "missing.pte"));
  CHECK(inspected.exit_code == 3);
  ordered_json files = one_document(inspected, "inspect");
  CHECK(files["files"][0]["error"]["exit_code"] == 3);
  if (ptb::test::have_jsonschema()) {
    CHECK(ptb::test::schema_problem("verify", verified.out) == "");
    CHECK(ptb::test::schema_problem("inspect", inspected.out) == "");
  }
}

TEST_CASE("cli: an unknown command is named; parse errors are ptbundle: error: lines") {
  auto unknown = run_cli("foo --json");
  check_error_document(unknown, "", "error", 2, "usage");
  CHECK(unknown.err == "ptbundle: error: unknown command 'foo'; see ptbundle --help\n");

  auto text = run_cli("foo");
  CHECK(text.exit_code == 2);
  CHECK(text.out.empty());
  CHECK(text.err == "ptbundle: error: unknown command 'foo'; see ptbundle --help\n");

  auto none = run_cli("");
  CHECK(none.exit_code == 2);
  CHECK(contains(none.err, "ptbundle: error: no command given"));

  auto flag = run_cli("inspect --no-such-flag x.pte");
  CHECK(flag.exit_code == 2);
  CHECK(flag.out.empty());
  CHECK(contains(flag.err, "ptbundle: error: inspect: "));
  CHECK(contains(flag.err, "--no-such-flag"));
  CHECK(std::count(flag.err.begin(), flag.err.end(), '\n') == 1);
}

TEST_CASE("cli --json: gpus follows schemas/gpus.schema.json") {
  auto result = run_cli("gpus --json");
  CHECK(result.exit_code == 0);
  ordered_json document = one_document(result, "gpus");
  CHECK(document.contains("driver"));
  if (ptb::test::have_jsonschema()) CHECK_MESSAGE(ptb::test::schema_problem("gpus", result.out) == "", result.out);
}
