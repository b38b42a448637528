// What a robot process pays to trust a part (docs/robot.md, "Trust"): the
// checks Model::open runs before loading, timed in this process through the
// same code (librobot's open_checked), against
//   - the same open without checks (Options::verify false, no keys),
//   - the physical limit: SHA-256 of the opened part's files and bundle.json,
//     the files hashed in parallel on every core, and
//   - `ptbundle verify --key` of the whole bundle, which checks every part.
// The bundle: named_sm90 exported into --parts parts of --gib GiB in all
// (each a content-addressed weights blob), signed. Medians of --runs runs
// with the files in the page cache. --markdown FILE replaces this
// benchmark's section of FILE (docs/performance.md).
//
//   bench_open_check [--gib N] [--parts N] [--runs N] [--cli PATH] [--dir DIR] [--keep] [--markdown FILE]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_bundles.h"
#include "bench_util.h"
#include "checked_open.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/manifest.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every file hashed once, the files spread over the cores.
double hash_in_parallel(const std::vector<std::string>& files) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  for (size_t t = 0; t < std::min(cores, files.size()); ++t) {
    threads.emplace_back([&files, t, cores] {
      for (size_t i = t; i < files.size(); i += cores) need(sha256_file(files[i]));
    });
  }
  for (auto& thread : threads) thread.join();
  return seconds_since(start);
}

double time_open(const std::string& bundle, const robot::Options& options) {
  const auto start = std::chrono::steady_clock::now();
  need(robot::detail::open_checked(bundle, options));
  return seconds_since(start);
}

std::string markdown_flag(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--markdown") return argv[i + 1];
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const BenchOptions options = parse_bench_options(argc, argv, /*gib=*/1.0, /*runs=*/5, /*parts=*/4);
  const fs::path fixtures = find_fixtures();
  if (fixtures.empty()) {
    std::printf("SKIPPED bench_open_check: ../shared/fixtures not found (set PTB_FIXTURES)\n");
    return 0;
  }
  if (!fs::exists(options.cli)) {
    std::printf("SKIPPED bench_open_check: no ptbundle binary at %s (pass --cli)\n", options.cli.c_str());
    return 0;
  }
  RemoveOnExit work{fs::path(options.dir) / ("ptbundle-bench-open-check-" + std::to_string(::getpid())), options.keep};
  fs::create_directories(work.path);
  write_key(work.path / "key.pem", work.path / "pub.pem");
  const uint64_t per_part = static_cast<uint64_t>(options.gib * (1ull << 30)) / static_cast<uint64_t>(options.parts);
  const fs::path data = work.path / "source.ptd", bundle = work.path / "bundle";
  write_named_sm90_data(fixtures, data, per_part);
  export_bundle(options.cli, fixtures, data, bundle, options.parts);
  fs::remove(data);
  if (run_child({options.cli, "sign", bundle.string(), "--key", (work.path / "key.pem").string()}).status != 0)
    fail("ptbundle sign failed: " + bundle.string());

  const Manifest manifest = need(read_manifest(bundle.string()));
  std::vector<std::string> part_files{(bundle / kManifestFileName).string()};
  uint64_t part_bytes = 0;
  for (const auto& file : manifest.parts.front().files) {
    part_files.push_back((bundle / file.path).string());
    part_bytes += file.size;
  }
  robot::Options checked;
  checked.part = manifest.parts.front().name;
  checked.keys = {(work.path / "pub.pem").string()};
  checked.require_signature = true;
  robot::Options unchecked;
  unchecked.part = checked.part;
  unchecked.verify = false;
  const std::vector<std::string> verify_all = {options.cli, "verify", "--gpu", "none", "--key",
                                               (work.path / "pub.pem").string(), bundle.string()};

  hash_in_parallel(part_files);  // into the page cache
  if (run_child(verify_all).status != 0) fail("ptbundle verify failed: " + bundle.string());
  std::vector<double> open_checked_s, open_plain_s, limit_s, verify_s;
  for (int run = 0; run < options.runs; ++run) {
    open_checked_s.push_back(time_open(bundle.string(), checked));
    open_plain_s.push_back(time_open(bundle.string(), unchecked));
    limit_s.push_back(hash_in_parallel(part_files));
    verify_s.push_back(run_child(verify_all).seconds);
  }
  const double check = median(open_checked_s), plain = median(open_plain_s), limit = median(limit_s),
               all = median(verify_s);
  char table[2048];
  std::snprintf(table, sizeof table,
                "| what | seconds | ratio |\n| --- | --- | --- |\n"
                "| open one part, checked (signature, bundle.json, the part's %zu files, %.0f MiB) | %.3f | |\n"
                "| the same open, unchecked | %.3f | |\n"
                "| limit: those files hashed once, in parallel on %u cores | %.3f | checked / limit %.2f |\n"
                "| `ptbundle verify --key` of all %d parts | %.3f | checked / verify all %.2f |\n",
                part_files.size() - 1, static_cast<double>(part_bytes) / (1 << 20), check, plain,
                std::thread::hardware_concurrency(), limit, check / limit, options.parts, all, check / all);
  std::printf("bench_open_check: %d parts of %.0f MiB, signed; medians of %d runs, page cache warm\n%s"
              "goal: checked within 1.3x of the limit\n",
              options.parts, static_cast<double>(per_part) / (1 << 20), options.runs, table);
  if (const std::string markdown = markdown_flag(argc, argv); !markdown.empty()) {
    char heading[512];
    std::snprintf(heading, sizeof heading,
                  "## Trusting a part at open (CPU)\n\n`bench_open_check --gib %g --parts %d --runs %d`: what\n"
                  "`Model::open` checks before loading one part of a signed bundle (docs/robot.md), medians,\n"
                  "page cache warm.\n\n",
                  options.gib, options.parts, options.runs);
    write_markdown_section(markdown, "bench_open_check", heading + std::string(table));
  }
  return 0;
}
