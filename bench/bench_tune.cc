// What a tune file buys a robot's process: for GPU packages whose GEMMs and
// convolutions run through the built-in runtime's cuBLASLt and cuDNN shims
// (make_packages.py's ResNet18, ACT-shaped model, convolution and Linear
// parts, compiled the "default" way), each exported into a bundle with its
// example as the test case, then `ptbundle run` started --runs times without
// the tune file (--no-tune) and --runs times after `ptbundle tune`:
//   - process start to first output: the wall time from starting the
//     process to the first byte of its report on stdout (with
//     --iterations 0: load, the first call, the report);
//   - the first call against the median of the calls after it (run's
//     first_call_ms and next_call_ms, both wall times with host inputs);
//   - whether every start with the file made the same choices (run's
//     tuning.choices_sha256) and searched none.
// Medians over the starts. Needs a GPU and PTB_GPU_PACKAGES (scripts/gpu-check
// compiles them); prints SKIPPED with the reason otherwise. --markdown FILE
// replaces this benchmark's section of FILE (docs/performance.md).
//
//   bench_tune [--runs N] [--cli PATH] [--dir DIR] [--keep] [--packages DIR] [--markdown FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_util.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/formats/json.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

std::string flag_value(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Started {
  double to_first_output_ms = 0;
  std::string out;
  int status = 0;
};

// Runs the shell command; the time from its start to the first byte on its stdout.
Started start(const std::string& command) {
  Started s;
  const auto begin = std::chrono::steady_clock::now();
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) fail("cannot start: " + command);
  char buffer[65536];
  bool first = true;
  for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    if (first) {
      s.to_first_output_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      first = false;
    }
    s.out.append(buffer, got);
  }
  s.status = ::pclose(pipe);
  if (s.status != 0) fail("failed (" + std::to_string(s.status) + "): " + command);
  return s;
}

struct Figures {
  double to_first_output_ms = 0, first_call_ms = 0, next_call_ms = 0;
  size_t choice_sets = 0;
  uint64_t searched = 0;
};

// `runs` starts of run, each twice: for the time to first output
// (--iterations 0) and for the first call against the next (with timing).
Figures starts(const std::string& cli, const fs::path& bundle, int runs, bool tuned) {
  std::vector<double> output, first, next;
  std::set<std::string> digests;
  Figures f;
  const std::string base = shell_quoted(cli) + " run " + shell_quoted(bundle.string()) + (tuned ? "" : " --no-tune") + " --json";
  for (int i = 0; i < runs; ++i) {
    output.push_back(start(base + " --iterations 0").to_first_output_ms);
    const Started timed = start(base + " --warmup 2 --iterations 20");
    auto report = parse_json_bounded(timed.out, "run --json", "run's report");
    if (!report.ok()) fail(report.error().message);
    first.push_back((*report)["first_call_ms"].get<double>());
    next.push_back((*report)["next_call_ms"].get<double>());
    digests.insert((*report)["tuning"]["choices_sha256"].get<std::string>());
    f.searched += (*report)["tuning"]["searched"].get<uint64_t>();
  }
  f.to_first_output_ms = median(output);
  f.first_call_ms = median(first);
  f.next_call_ms = median(next);
  f.choice_sets = digests.size();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options = parse_bench_options(argc, argv, 0, 10);
  std::string packages = flag_value(argc, argv, "--packages");
  if (packages.empty() && std::getenv("PTB_GPU_PACKAGES")) packages = std::getenv("PTB_GPU_PACKAGES");
  auto device = cuda_device(0);
  if (!device.ok()) {
    std::printf("bench_tune: SKIPPED: %s (the tune file's effect is measured on a GPU)\n", device.error().message.c_str());
    return 0;
  }
  if (packages.empty() || !fs::is_directory(packages)) {
    std::printf("bench_tune: SKIPPED: no GPU packages (set PTB_GPU_PACKAGES or --packages; scripts/gpu-check compiles "
                "them with tests/gpu/make_packages.py)\n");
    return 0;
  }
  const fs::path work = fs::path(options.dir) / ("bench_tune." + std::to_string(::getpid()));
  fs::create_directories(work);
  RemoveOnExit remove{work, options.keep};
  char line[512];
  std::string table =
      "| part | starts | to first output, no tune file | with it | first call / next calls, no tune file | with it "
      "| choice sets with it | searches with it |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  size_t measured = 0;
  for (const std::string stem : {"resnet18-default", "act-default", "convs-default", "linears-default"}) {
    const fs::path package = fs::path(packages) / (stem + ".pt2");
    if (!fs::exists(package)) {
      std::printf("bench_tune: %s: not in %s, left out\n", stem.c_str(), packages.c_str());
      continue;
    }
    std::string ins, outs;
    for (int i = 0; fs::exists(fs::path(packages) / (stem + ".in" + std::to_string(i) + ".npy")); ++i)
      ins += (i ? "," : "") + (fs::path(packages) / (stem + ".in" + std::to_string(i) + ".npy")).string();
    for (int i = 0; fs::exists(fs::path(packages) / (stem + ".out" + std::to_string(i) + ".npy")); ++i)
      outs += (i ? "," : "") + (fs::path(packages) / (stem + ".out" + std::to_string(i) + ".npy")).string();
    const fs::path bundle = work / stem;
    fs::remove_all(bundle);
    start(shell_quoted(options.cli) + " export -q -o " + shell_quoted(bundle.string()) + " --part p=" + shell_quoted(package.string()) +
          " --example " + shell_quoted("p=" + ins + ":" + outs) + " >/dev/null");
    const Figures without = starts(options.cli, bundle, options.runs, false);
    start(shell_quoted(options.cli) + " tune -q " + shell_quoted(bundle.string()) + " >/dev/null");
    const Figures with = starts(options.cli, bundle, options.runs, true);
    std::snprintf(line, sizeof line,
                  "| %s | %d | %.0f ms | %.0f ms | %.2f ms / %.2f ms (%.1fx) | %.2f ms / %.2f ms (%.1fx) | %zu | %llu |\n",
                  stem.c_str(), options.runs, without.to_first_output_ms, with.to_first_output_ms, without.first_call_ms,
                  without.next_call_ms, without.first_call_ms / without.next_call_ms, with.first_call_ms,
                  with.next_call_ms, with.first_call_ms / with.next_call_ms, with.choice_sets,
                  static_cast<unsigned long long>(with.searched));
    std::fputs(line, stdout);
    table += line;
    ++measured;
  }
  if (!measured) {
    std::printf("bench_tune: SKIPPED: none of its packages is in %s\n", packages.c_str());
    return 0;
  }
  if (const std::string markdown = flag_value(argc, argv, "--markdown"); !markdown.empty()) {
    const std::string heading = "## A tuned first call (bench_tune)\n\nOn " + device->name + " (" +
                                device->capability.name() + "), medians over the starts of `ptbundle run`; a call's "
                                "time is its wall time with host inputs.\n\n";
    write_markdown_section(markdown, "bench_tune", heading + table);
  }
  return 0;
}
