// The progress line and -q, as a person at a terminal meets them: the CLI
// runs with its stderr on a pseudo-terminal (openpty), its stdout in a file.
// The fixtures are small, so the tests' CLI (tests/seams/) is asked to draw
// every update at once (PTB_TEST_PROGRESS_EVERY_UPDATE); `ptbundle` waits
// half a second before the first.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_child.h"
#include "support.h"

namespace {

using namespace ptb::test;

const std::string kErase = "\r\033[K";

struct TerminalRun {
  int exit_code = -1;
  std::string out;  // stdout, a file
  std::string err;  // what the terminal showed of stderr
};

// The seamed CLI with stderr on a pseudo-terminal of 200 columns.
TerminalRun run_on_terminal(const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  struct winsize size {};
  size.ws_col = 200;
  size.ws_row = 50;
  REQUIRE(::openpty(&master, &slave, nullptr, nullptr, &size) == 0);
  // Neither end stays open in the child beyond its stderr, so that the
  // terminal closes when the child ends.
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  ptb::test::ChildOptions options;
  options.env = {{"PTB_TEST_PROGRESS_EVERY_UPDATE", "1"}};
  options.stderr_fd = slave;
  ptb::test::CliChild child(args, options);
  ::close(slave);
  TerminalRun run;
  // Read until the child's side is closed (EIO), so that a full terminal
  // buffer never holds the child up.
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.err.append(buffer, static_cast<size_t>(n));
  }
  ::close(master);
  const ptb::test::ChildResult ended = child.wait();
  run.exit_code = ended.exit_code;
  run.out = ended.out;
  return run;
}

// A progress line of `step` was drawn, and erased before the command ended
// or wrote anything else.
void check_progress(const TerminalRun& run, const std::string& step) {
  CAPTURE(run.err);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.err, kErase + step));
  CHECK(contains(run.err, " of "));
  const size_t last = run.err.rfind(kErase);
  REQUIRE(last != std::string::npos);
  // After the last erase: nothing, or whole lines (a note), never figures.
  const std::string after = run.err.substr(last + kErase.size());
  CHECK_FALSE(contains(after, " of "));
}

void check_silent(const TerminalRun& run) {
  CAPTURE(run.err);
  CHECK(run.exit_code == 0);
  CHECK_FALSE(contains(run.err, "\033[K"));
  CHECK_FALSE(contains(run.err, "ptbundle:"));
}

// Two bundles of part "enc", exported on sm80 and sm90; bundle `a` signed.
struct Bundles {
  TempDir dir;
  fs::path a = dir / "a";
  fs::path b = dir / "b";
  Bundles() {
    REQUIRE(run_child({"export", "-o", a.string(), "--part", "enc=" + fixture("cuda/sm80/model.pte").string() + "," +
                                                                 fixture("cuda/sm80/aoti_cuda_blob.ptd").string()})
                .exit_code == 0);
    REQUIRE(run_child({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string() + "," +
                                                                 fixture("cuda/sm90/aoti_cuda_blob.ptd").string()})
                .exit_code == 0);
    make_key_pair(dir.path());
  }
};

std::string pair_of(const std::string& target) {
  return fixture("cuda/" + target + "/model.pte").string() + "," + fixture("cuda/" + target + "/aoti_cuda_blob.ptd").string();
}

}  // namespace

TEST_CASE("progress: every long command draws a line on a terminal's stderr, and erases it") {
  PTB_REQUIRE_FIXTURES();
  Bundles bundles;
  const std::string a = bundles.a.string(), b = bundles.b.string();
  const std::string enc = "enc=" + pair_of("sm80");

  SUBCASE("export") { check_progress(run_on_terminal({"export", "-o", (bundles.dir / "c").string(), "--part", enc}), "writing "); }
  SUBCASE("verify") { check_progress(run_on_terminal({"verify", "--gpu", "none", a}), "hashing "); }
  SUBCASE("sign") {
    check_progress(run_on_terminal({"sign", a, "--key", (bundles.dir / "key.pem").string()}), "hashing ");
  }
  SUBCASE("inspect --sha256") { check_progress(run_on_terminal({"inspect", "--sha256", a}), "hashing "); }
  SUBCASE("merge of bundles") {
    TerminalRun run = run_on_terminal({"merge", "-o", (bundles.dir / "merged").string(), a, b});
    check_progress(run, "checking the input bundles");
    CHECK(contains(run.err, "ptbundle: wrote the bundle"));  // a note, after the line was erased
  }
  SUBCASE("merge of programs") {
    check_progress(run_on_terminal({"merge", "-o", (bundles.dir / "m.pte").string(), "--output-data",
                                    (bundles.dir / "m.ptd").string(), pair_of("sm80"), pair_of("sm90")}),
                   "comparing weights");
  }
}

TEST_CASE("progress: -q silences the line and the notes on a terminal, never the report") {
  PTB_REQUIRE_FIXTURES();
  Bundles bundles;
  const std::string a = bundles.a.string(), b = bundles.b.string();
  check_silent(run_on_terminal({"export", "-q", "-o", (bundles.dir / "c").string(), "--part", "enc=" + pair_of("sm80")}));
  check_silent(run_on_terminal({"verify", "--quiet", "--gpu", "none", a}));
  check_silent(run_on_terminal({"inspect", "-q", "--sha256", a}));
  check_silent(run_on_terminal({"sign", "-q", a, "--key", (bundles.dir / "key.pem").string()}));
  TerminalRun merged = run_on_terminal({"merge", "-q", "-o", (bundles.dir / "merged").string(), a, b});
  check_silent(merged);
  CHECK(contains(merged.out, "enc"));  // the report still on stdout
  check_silent(run_on_terminal({"merge", "-q", "-o", (bundles.dir / "m.pte").string(), "--output-data",
                                (bundles.dir / "m.ptd").string(), pair_of("sm80"), pair_of("sm90")}));

  // An error is never silenced.
  TerminalRun failed = run_on_terminal({"sign", "-q", a, "--key", (bundles.dir / "missing.pem").string()});
  CHECK(failed.exit_code != 0);
  CHECK(contains(failed.err, "ptbundle: error:"));
}

TEST_CASE("progress: nothing is drawn when stderr is not a terminal") {
  PTB_REQUIRE_FIXTURES();
  Bundles bundles;
  ChildOptions every;
  every.env["PTB_TEST_PROGRESS_EVERY_UPDATE"] = "1";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"verify", "--gpu", "none", bundles.a.string()},
        std::vector<std::string>{"inspect", "--sha256", bundles.a.string()},
        std::vector<std::string>{"merge", "-o", (bundles.dir / "merged").string(), bundles.a.string(), bundles.b.string()}}) {
    CAPTURE(args.front());
    const ChildResult run = run_child(args, every);
    CHECK(run.exit_code == 0);
    CHECK_FALSE(contains(run.err, "\033[K"));
    CHECK_FALSE(contains(run.out, "\033[K"));
  }
}

TEST_CASE("progress: with --json on a terminal, stdout holds one JSON document and the line stays on stderr") {
  PTB_REQUIRE_FIXTURES();
  Bundles bundles;
  const std::string a = bundles.a.string(), b = bundles.b.string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"export", "--json", "-o", (bundles.dir / "c").string(), "--part", "enc=" + pair_of("sm80")},
        std::vector<std::string>{"verify", "--json", "--gpu", "none", a},
        std::vector<std::string>{"inspect", "--json", "--sha256", a},
        std::vector<std::string>{"sign", "--json", a, "--key", (bundles.dir / "key.pem").string()},
        std::vector<std::string>{"merge", "--json", "-o", (bundles.dir / "merged").string(), a, b}}) {
    CAPTURE(args.front());
    const TerminalRun run = run_on_terminal(args);
    CHECK(run.exit_code == 0);
    CHECK(contains(run.err, kErase));  // progress was drawn, on stderr
    CHECK_FALSE(contains(run.out, "\033"));
    const auto document = nlohmann::ordered_json::parse(run.out, nullptr, false);
    CHECK_FALSE(document.is_discarded());
  }
}
