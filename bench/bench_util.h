// What the benchmarks share: stopping with a message, the fixtures folder,
// and running a command as a child to time it and read its peak memory.
#pragma once

#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb::bench {

[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  std::exit(1);
}

template <class T>
T need(Result<T> result) {
  if (!result.ok()) fail(result.error().message);
  return std::move(result).value();
}

inline void need(const Status& status) {
  if (!status.ok()) fail(status.error().message);
}

// PTB_FIXTURES, or ../shared/fixtures from the working folder or the source
// tree; empty when none is there.
inline std::filesystem::path find_fixtures() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("PTB_FIXTURES")) return env;
  for (fs::path candidate : {fs::path("../shared/fixtures"), fs::path("../../shared/fixtures"),
                             fs::path(__FILE__).parent_path() / ".." / ".." / "shared" / "fixtures"}) {
    if (fs::is_directory(candidate / "cuda")) return fs::canonical(candidate);
  }
  return {};
}

struct ChildRun {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system: what the run cost, whatever else the machine was doing
  long peak_kib = 0;
  int status = -1;
};

// Runs `argv` (looked up in PATH) as a child with its stdout on /dev/null;
// wall time, CPU time and peak RSS from wait4.
inline ChildRun run_child(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* sink = std::freopen("/dev/null", "w", stdout);
    (void)sink;
    ::execvp(args[0], args.data());
    std::_Exit(127);
  }
  ChildRun result;
  struct rusage usage {};
  int status = 0;
  ::wait4(pid, &status, 0, &usage);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.peak_kib = usage.ru_maxrss;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  result.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return result;
}

}  // namespace ptb::bench
