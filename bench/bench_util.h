// What the benchmarks share: stopping with a message, their options, the
// fixtures folder, a work folder removed on the way out, medians, and running
// a command as a child to time it and read its peak memory.
#pragma once

#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"

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

// The options the benchmarks take, each using those it needs: --gib N (the
// size of what it makes), --parts N, --runs N, --cli PATH (the ptbundle
// binary; by default the one built beside the benchmark), --dir DIR (where
// its inputs go; by default the temporary folder) and --keep (leave them for
// profiling by hand).
struct BenchOptions {
  double gib = 0;
  int runs = 0;
  int parts = 0;
  std::string cli;
  std::string dir;
  bool keep = false;
};

// The command line's options; the sizes it leaves out are the benchmark's defaults.
inline BenchOptions parse_bench_options(int argc, char** argv, double gib, int runs = 3, int parts = 8) {
  BenchOptions options;
  options.gib = gib;
  options.runs = runs;
  options.parts = parts;
  options.cli = (std::filesystem::path(argv[0]).parent_path() / ".." / "apps" / "ptbundle").string();
  options.dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--keep") {
      options.keep = true;
      continue;
    }
    if (i + 1 >= argc) break;
    std::string value = argv[++i];
    if (flag == "--gib") options.gib = std::atof(value.c_str());
    else if (flag == "--parts") options.parts = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--runs") options.runs = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--cli") options.cli = value;
    else if (flag == "--dir") options.dir = value;
  }
  return options;
}

// Removes the work folder on every way out (the inputs are gigabytes), unless kept.
struct RemoveOnExit {
  std::filesystem::path path;
  bool keep = false;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path.empty() && !keep) std::filesystem::remove_all(path, ec);
  }
};

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
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

// named_sm90's data file (fixtures/cuda/named_sm90/encoder.ptd) plus
// `blob_size` random bytes stored under their SHA-256, as a weights blob
// ExecuTorch names by content: a bundle exported from it has a large data
// file whose key verify, export and inspect hash.
inline void write_named_sm90_data(const std::filesystem::path& fixtures, const std::filesystem::path& out,
                                  uint64_t blob_size) {
  std::vector<uint8_t> blob(blob_size);
  std::mt19937_64 random(42);
  for (size_t i = 0; i + 8 <= blob.size(); i += 8) {
    const uint64_t v = random();
    std::copy_n(reinterpret_cast<const uint8_t*>(&v), 8, blob.data() + i);
  }
  const std::string key = to_hex(sha256(Bytes(blob.data(), blob.size()))) + "_weights_blob";
  auto original = need(PtdFile::open((fixtures / "cuda/named_sm90/encoder.ptd").string()));
  PtdContents contents;
  for (const auto& entry : original.entries())
    contents.add(entry.key, SegmentSource::file_range(original.file(), entry.file_offset, entry.size), entry.layout);
  contents.add(key, SegmentSource::memory(Bytes(blob.data(), blob.size())), std::nullopt);
  need(write_ptd_file(out.string(), contents));
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
