// `merge -o m.pte --output-data m.ptd` killed at any moment: each output
// pair is the old pair or the new one once the next merge has repaired
// what the journal proves, verify never calls a whole pair out of step, and
// the repair never puts one merge's program beside another's data.
//
// A few kills at each step of the commit and at random moments in CI;
// scripts/race-loops sets PTB_RACE_ROUNDS (1,000 kills).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "support.h"

using ptb::test::contains;
using ptb::test::fixture;
using ptb::test::quote;
using ptb::test::read_bytes;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

int rounds(int ci_rounds) {
  const char* text = std::getenv("PTB_RACE_ROUNDS");
  return text && std::atoi(text) > 0 ? std::atoi(text) : ci_rounds;
}

std::string export_pair(const std::string& folder) {
  fs::path path = fixture("cuda/" + folder);
  return (path / "model.pte").string() + "," + (path / "aoti_cuda_blob.ptd").string();
}

// The CLI with `args`, stdout and stderr to /dev/null; `env` added. With
// `kill_after` it is sent SIGKILL after that long unless it ended first.
// Returns its exit code, 128 + signal when killed.
int run_killed(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
               std::optional<std::chrono::microseconds> kill_after) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::freopen("/dev/null", "w", stdout);
    ::freopen("/dev/null", "w", stderr);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    std::vector<std::string> copy = args;
    std::string program = PTB_CLI_PATH;
    std::vector<char*> argv{program.data()};
    for (auto& arg : copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  if (kill_after) {
    std::this_thread::sleep_for(*kill_after);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Pair {
  std::vector<uint8_t> pte, ptd;
  bool operator==(const Pair&) const = default;
};

}  // namespace

TEST_CASE("merge pair: a kill at any moment leaves the old pair or the new one, and no false 'out of step'") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path pte = dir / "m.pte", ptd = dir / "m.ptd";
  const std::vector<std::string> merge{"merge", "-o", pte.string(), "--output-data", ptd.string(), export_pair("sm80"),
                                       export_pair("sm90")};
  REQUIRE(run_killed(merge, {}, std::nullopt) == 0);
  const Pair fresh{read_bytes(pte), read_bytes(ptd)};
  // The old pair: another export whose data file differs from the merge's
  // (one weight), so that every mix of old and new files can be told apart.
  const fs::path old_pte = fixture("cuda/bad_weights_sm86/model.pte"), old_ptd = fixture("cuda/bad_weights_sm86/aoti_cuda_blob.ptd");
  const Pair old{read_bytes(old_pte), read_bytes(old_ptd)};
  REQUIRE(old.ptd != fresh.ptd);
  // A merge that fails once it has repaired what it found (its last input is no program).
  std::vector<std::string> repair = merge;
  {
    std::ofstream junk(dir / "junk.pte");
    junk << "not a program";
  }
  {
    std::ofstream junk(dir / "junk.ptd");
    junk << "not data";
  }
  repair.back() = (dir / "junk.pte").string() + "," + (dir / "junk.ptd").string();

  // How long an uninterrupted merge takes, for the random moments.
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(run_killed(merge, {}, std::nullopt) == 0);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);

  const std::vector<std::string> steps{"merge-pair-journal", "merge-pair", "merge-pair-done"};
  std::mt19937_64 random(41);
  std::map<std::string, int> ended;
  const int count = rounds(12);
  for (int round = 0; round < count; ++round) {
    CAPTURE(round);
    fs::copy_file(old_pte, pte, fs::copy_options::overwrite_existing);
    fs::copy_file(old_ptd, ptd, fs::copy_options::overwrite_existing);
    fs::permissions(pte, fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(ptd, fs::perms::owner_write, fs::perm_options::add);
    // Each step of the commit in turn, then random moments of the whole merge.
    std::map<std::string, std::string> env;
    std::optional<std::chrono::microseconds> after;
    if (round < static_cast<int>(steps.size()) * 2) {
      env["PTB_TEST_KILL_AT"] = steps[round % steps.size()];
    } else {
      after = std::chrono::microseconds(random() % static_cast<uint64_t>(took.count() * 3 / 2 + 1));
    }
    run_killed(merge, env, after);

    const Pair now{read_bytes(pte), read_bytes(ptd)};
    const bool whole = now == old || now == fresh;
    auto verified = ptb::test::run_cli("verify " + quote(pte.string() + "," + ptd.string()) + " --gpu none");
    if (whole) {
      // Old or new, the pair verifies and nothing calls it out of step.
      CHECK_MESSAGE(verified.exit_code == 0, verified.out);
      CHECK_FALSE(contains(verified.out, "out of step"));
      CHECK_FALSE(contains(verified.out, "WARN"));
      ++ended[now == old ? "old pair" : "new pair"];
    } else {
      // The one torn state a kill can leave: the new data, the old program.
      CHECK(now.ptd == fresh.ptd);
      CHECK(now.pte == old.pte);
      CHECK(verified.exit_code == 1);
      CHECK(contains(verified.out, "out of step"));
      ++ended["torn until repaired"];
    }
    // The next merge (failing on its own input) repairs first: whole again.
    CHECK(run_killed(repair, {}, std::nullopt) != 0);
    const Pair repaired{read_bytes(pte), read_bytes(ptd)};
    CHECK((repaired == old || repaired == fresh));
    CHECK_FALSE(fs::exists(dir / ".m.pte.ptbundle-pair"));
    auto again = ptb::test::run_cli("verify " + quote(pte.string() + "," + ptd.string()) + " --gpu none --json");
    CHECK_MESSAGE(again.exit_code == 0, again.out);
    CHECK_FALSE(contains(again.out, "\"status\": \"warn\""));
  }
  if (std::getenv("PTB_RACE_ROUNDS")) {
    std::string summary;
    for (const auto& [what, n] : ended) summary += (summary.empty() ? "" : ", ") + what + " " + std::to_string(n);
    std::printf("[race] merge pair killed at random: %d rounds; %s\n", count, summary.c_str());
  }
}
