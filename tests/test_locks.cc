// Locks that cannot be held hostage, and writers that leave nothing behind:
// a reader's lock that never ends, readers that follow each other, a sign or
// merge killed at its last step, two signs at once, a file size limit, a
// first export that fails under folders it made. The CLI runs as a child.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_child.h"
#include "race_loop.h"
#include "support.h"

using ptb::test::ChildOptions;
using ptb::test::CliChild;
using ptb::test::contains;
using ptb::test::enc_export_args;
using ptb::test::fixture;
using ptb::test::make_key_pair;
using ptb::test::run_child;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A process of the test's own that holds flock(LOCK_SH) on `path` (as
// `flock -s PATH sleep` would) until destroyed.
class SharedLockHolder {
 public:
  explicit SharedLockHolder(const fs::path& path) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::flock(fd, LOCK_SH) != 0) ::_exit(1);
      char byte = 1;
      (void)!::write(ready[1], &byte, 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
  }
  ~SharedLockHolder() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Temporary files, locks, journals or staging markers anywhere under `dir`.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".tmp") || name == ".ptbundle.lock" || name == ".ptbundle.pending" ||
        name == ".ptbundle-merge-staging" || name.find(".merge-") != std::string::npos)
      found.push_back(entry.path().string());
  }
  return found;
}

}  // namespace

TEST_CASE("locks: a writer kept waiting by a reader's lock gives up after PTBUNDLE_LOCK_WAIT and names the holder's pid") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run_child(enc_export_args(bundle)).exit_code == 0);
  SharedLockHolder reader(bundle);
  ChildOptions options;
  options.env["PTBUNDLE_LOCK_WAIT"] = "1";
  options.timeout_seconds = 60;
  auto blocked = run_child(enc_export_args(bundle, "second"), options);
  CHECK_FALSE(blocked.timed_out);
  CHECK(blocked.exit_code == 3);
  CHECK_MESSAGE(contains(blocked.err, "held by pid " + std::to_string(reader.pid()) + " ("), blocked.err);
  CHECK(contains(blocked.err, "shared)"));
  CHECK(contains(blocked.err, "waited 1 s (PTBUNDLE_LOCK_WAIT)"));
  CHECK(leftovers(bundle).empty());
}

TEST_CASE("locks: readers that follow each other do not starve a writer") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run_child(enc_export_args(bundle)).exit_code == 0);
  // Four verify loops, started apart, so that some reader always holds the
  // folder's lock.
  std::atomic<bool> stop{false};
  std::atomic<int> verified{0};
  std::vector<std::thread> loops;
  for (int i = 0; i < 4; ++i) {
    loops.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(60 * i));
      while (!stop) {
        auto result = run_child({"verify", bundle.string(), "--gpu", "none"});
        if (result.exit_code == 0) ++verified;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ChildOptions options;
  options.env["PTBUNDLE_LOCK_WAIT"] = "30";
  std::vector<std::string> forced = enc_export_args(bundle, "enc");
  forced.push_back("--force");
  auto replaced = run_child(forced, options);
  stop = true;
  for (auto& loop : loops) loop.join();
  MESSAGE("[locks] " << verified.load() << " verify runs beside two exports");
  CHECK_MESSAGE(replaced.exit_code == 0, replaced.err);
  CHECK(verified.load() > 0);
}

TEST_CASE("locks: a sign killed before its rename leaves nothing that blocks verify --key or the next sign") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_key_pair(dir.path());
  auto bundle = dir / "bundle";
  REQUIRE(run_child(enc_export_args(bundle)).exit_code == 0);
  const std::vector<std::string> sign{"sign", bundle.string(), "--key", (dir / "key.pem").string()};
  const std::vector<std::string> verify{"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()};
  REQUIRE(run_child(sign).exit_code == 0);
  ChildOptions kill;
  kill.env["PTB_TEST_KILL_AT"] = "sign-rename";
  auto killed = run_child(sign, kill);
  REQUIRE(killed.exit_code == 128 + SIGKILL);
  REQUIRE_FALSE(leftovers(bundle).empty());  // its temporary signature and its lock file
  auto checked = run_child(verify);
  CHECK_MESSAGE(checked.exit_code == 0, checked.out);
  CHECK(contains(checked.out, "a temporary file of an interrupted write"));
  auto again = run_child(sign);
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK_MESSAGE(leftovers(bundle).empty(), ptb::test::quote(bundle));
  CHECK(run_child(verify).exit_code == 0);

  // SIGTERM at the same step waits for the rename: the signature is made.
  kill.env["PTB_TEST_KILL_SIGNAL"] = "TERM";
  auto termed = run_child(sign, kill);
  CHECK(termed.exit_code == 0);
  CHECK(contains(termed.err, "SIGTERM arrived during the commit"));
  CHECK(leftovers(bundle).empty());
  CHECK(run_child(verify).exit_code == 0);
}

TEST_CASE("locks: two signs at once into a.sig and b.sig never both succeed; the bundle verifies") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_key_pair(dir.path());
  ptb::test::RaceLoop loop("two signs at once into a.sig and b.sig", 4);
  while (loop.next()) {
    CAPTURE(loop.round());
    auto bundle = dir / ("bundle" + std::to_string(loop.round()));
    REQUIRE(run_child(enc_export_args(bundle)).exit_code == 0);
    CliChild a({"sign", bundle.string(), "--key", (dir / "key.pem").string(), "--output", "a.sig"});
    CliChild b({"sign", bundle.string(), "--key", (dir / "key.pem").string(), "--output", "b.sig"});
    auto ra = a.wait();
    auto rb = b.wait();
    loop.outcome(ra.exit_code == 0 ? "a.sig signed" : "b.sig signed");
    CHECK((ra.exit_code == 0) != (rb.exit_code == 0));
    CHECK(fs::exists(bundle / "a.sig") != fs::exists(bundle / "b.sig"));
    auto verified = run_child({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()});
    CHECK_MESSAGE(verified.exit_code == 0, verified.out);
    fs::remove_all(bundle);
  }
}

TEST_CASE("locks: merge's staging folders are removed by the next merge even when killed before the marker or after the rename") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto a = dir / "a";
  auto b = dir / "b";
  REQUIRE(run_child(enc_export_args(a)).exit_code == 0);
  REQUIRE(run_child({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  // Killed between mkdir and the marker: an empty folder of merge's name.
  fs::create_directory(dir / ".m.merge-Ab12Cd");
  auto merged = run_child({"merge", "-o", (dir / "m").string(), a.string(), b.string()});
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  CHECK_FALSE(fs::exists(dir / ".m.merge-Ab12Cd"));
  // A user's folder of that form, not empty and unmarked, stays.
  fs::create_directory(dir / ".n.merge-Ab12Cd");
  std::ofstream(dir / ".n.merge-Ab12Cd" / "notes.txt") << "mine";
  REQUIRE(run_child({"merge", "-o", (dir / "n").string(), a.string(), b.string()}).exit_code == 0);
  CHECK(fs::exists(dir / ".n.merge-Ab12Cd" / "notes.txt"));

  // Killed after the rename, before the marker went: a temporary of the
  // merged bundle, named by verify and removed by the next writer.
  ChildOptions kill;
  kill.env["PTB_TEST_KILL_AT"] = "merge-unmark";
  auto killed = run_child({"merge", "-o", (dir / "k").string(), a.string(), b.string()}, kill);
  REQUIRE(killed.exit_code == 128 + SIGKILL);
  REQUIRE(fs::exists(dir / "k" / ".ptbundle-merge-staging"));
  auto verified = run_child({"verify", (dir / "k").string(), "--gpu", "none"});
  CHECK_MESSAGE(verified.exit_code == 0, verified.out);
  CHECK(contains(verified.out, ".ptbundle-merge-staging"));
  make_key_pair(dir.path());
  auto signed_ = run_child({"sign", (dir / "k").string(), "--key", (dir / "key.pem").string()});
  CHECK_MESSAGE(signed_.exit_code == 0, signed_.err);
  CHECK_FALSE(fs::exists(dir / "k" / ".ptbundle-merge-staging"));
}

TEST_CASE("locks: under a file size limit (ulimit -f) export and merge fail as I/O errors and leave nothing behind") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto a = dir / "a";
  auto b = dir / "b";
  REQUIRE(run_child(enc_export_args(a)).exit_code == 0);
  REQUIRE(run_child({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  ChildOptions limited;
  limited.file_size_limit = 16 << 10;  // the program is 28 KB
  auto exported = run_child(enc_export_args(a, "second"), limited);
  CHECK(exported.exit_code == 3);
  CHECK_MESSAGE(contains(exported.err, "ulimit -f"), exported.err);
  CHECK_MESSAGE(leftovers(a).empty(), ptb::test::quote(a));
  CHECK(run_child({"verify", a.string(), "--gpu", "none"}).exit_code == 0);
  auto fresh = run_child(enc_export_args(dir / "fresh"), limited);
  CHECK(fresh.exit_code == 3);
  CHECK_FALSE(fs::exists(dir / "fresh"));

  auto merged = run_child({"merge", "-o", (dir / "m").string(), a.string(), b.string()}, limited);
  CHECK(merged.exit_code == 3);
  CHECK_FALSE(fs::exists(dir / "m"));
  CHECK_MESSAGE(leftovers(dir.path()).empty(), ptb::test::quote(dir.path()));
}

TEST_CASE("locks: a failed first export removes the folders it made above the bundle, and only those") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  fs::create_directory(dir / "there");
  std::ofstream(dir / "bad.pte") << "not a program";
  auto failed = run_child({"export", "-o", (dir / "there" / "a" / "b" / "c" / "B").string(), "--part",
                           "x=" + (dir / "bad.pte").string()});
  CHECK(failed.exit_code != 0);
  CHECK(fs::exists(dir / "there"));
  CHECK_FALSE(fs::exists(dir / "there" / "a"));
}
