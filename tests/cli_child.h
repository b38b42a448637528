// The ptbundle binary run as a child with a time limit, for tests of hostile
// inputs: a hang is a failure, not a stuck test; its exit status (128 +
// signal when killed), output and peak memory (wait4's rusage) come back.
// Optional per-child limits (RLIMIT_FSIZE) and signal dispositions let a test
// give the command the environment an attacker or a shell would.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support.h"

namespace ptb::test {

struct ChildResult {
  int exit_code = -1;  // 128 + signal when killed
  bool timed_out = false;
  long peak_rss_kib = 0;
  std::string out, err;
};

struct ChildOptions {
  std::map<std::string, std::string> env;  // added to the environment
  std::optional<rlim_t> file_size_limit;   // RLIMIT_FSIZE (ulimit -f), in bytes
  // The child's stderr, where >= 0 (a pseudo-terminal's side, which the
  // caller reads); else a file whose text wait() returns.
  int stderr_fd = -1;
  int timeout_seconds = 120;
};

class CliChild {
 public:
  explicit CliChild(const std::vector<std::string>& args, const ChildOptions& options = {}) : timeout_(options.timeout_seconds) {
    out_ = scratch_ / "stdout";
    err_ = scratch_ / "stderr";
    // Closed by a successful exec: the constructor returns only once the
    // child is ptbundle, so a signal a test sends never lands in the forked
    // copy of the test program.
    int exec_pipe[2];
    REQUIRE(::pipe2(exec_pipe, O_CLOEXEC) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(exec_pipe[0]);
      int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = options.stderr_fd >= 0 ? options.stderr_fd : ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::dup2(in, 0);
      for (const auto& [key, value] : options.env) ::setenv(key.c_str(), value.c_str(), 1);
      if (options.file_size_limit) {
        rlimit limit{*options.file_size_limit, *options.file_size_limit};
        ::setrlimit(RLIMIT_FSIZE, &limit);
      }
      ::signal(SIGXFSZ, SIG_DFL);  // as a shell leaves it
      std::vector<char*> argv;
      // A PTB_TEST_ variable asks for a seam: the CLI built with them.
      bool seamed = false;
      for (const auto& entry : options.env) seamed = seamed || entry.first.starts_with("PTB_TEST_");
      std::string program = seamed ? PTB_SEAMED_CLI_PATH : PTB_CLI_PATH;
      argv.push_back(program.data());
      std::vector<std::string> copy = args;
      for (auto& arg : copy) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(exec_pipe[1]);
    char byte;
    while (::read(exec_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(exec_pipe[0]);
  }
  pid_t pid() const { return pid_; }

  // For a child started with PTB_TEST_KILL_AT=<point> and
  // PTB_TEST_KILL_SIGNAL=STOP: waits until it stops there (true) or ends
  // without reaching it (false; wait() then reports how it ended).
  bool wait_stopped() {
    int status = 0;
    if (::waitpid(pid_, &status, WUNTRACED) != pid_) return false;
    if (WIFSTOPPED(status)) return true;
    ended_ = status;
    return false;
  }

  ChildResult wait() {
    ChildResult child;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_);
    int status = ended_.value_or(0);
    rusage usage{};
    for (; !ended_;) {
      pid_t done = ::wait4(pid_, &status, WNOHANG, &usage);
      if (done == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        child.timed_out = true;
        ::kill(pid_, SIGKILL);
        ::wait4(pid_, &status, 0, &usage);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    child.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    child.peak_rss_kib = usage.ru_maxrss;
    child.out = read_text(out_);
    child.err = read_text(err_);
    return child;
  }

 private:
  TempDir scratch_;
  fs::path out_, err_;
  pid_t pid_ = -1;
  int timeout_ = 120;
  std::optional<int> ended_;  // its wait status, where wait_stopped reaped it
};

inline ChildResult run_child(const std::vector<std::string>& args, const ChildOptions& options = {}) {
  return CliChild(args, options).wait();
}

// dir/key.pem and dir/pub.pem, a P-256 pair (the openssl command).
inline void make_key_pair(const fs::path& dir) {
  REQUIRE(std::system(("openssl ecparam -genkey -name prime256v1 -noout -out " + quote(dir / "key.pem") +
                       " 2>/dev/null && openssl ec -in " + quote(dir / "key.pem") + " -pubout -out " +
                       quote(dir / "pub.pem") + " 2>/dev/null").c_str()) == 0);
}

// A bundle of part `part` exported from the real sm80 fixture.
inline std::vector<std::string> enc_export_args(const fs::path& bundle, const std::string& part = "enc") {
  return {"export", "-o", bundle.string(), "--part", part + "=" + fixture("cuda/sm80/model.pte").string()};
}

}  // namespace ptb::test
