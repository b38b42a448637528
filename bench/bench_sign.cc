// How fast a bundle's files are hashed for `verify` (and `sign`), against
// `openssl dgst -sha256` of the same files run one after another: the ratio
// is what hashing files in parallel on every core buys. Also the time of
// `ptbundle sign` and `ptbundle verify --key` on a tiny bundle (goal < 50 ms).
//
// The bundle is made with `ptbundle export` from ExecuTorch's real named_sm90
// export whose data file gets one extra weights blob under its content
// address ("<sha256>_weights_blob", random bytes), so that verify also checks
// that key: N parts of (GiB / N) each, 4 GiB in 8 parts by default. Timings
// are medians of --runs runs with the files in the page cache (a warm-up run
// first), each a fresh process (peak RSS from wait4); the in-process figures
// time hash_folder with and without the content-key streams.
//
//   bench_sign [--gib N] [--parts N] [--runs N] [--cli PATH] [--dir DIR] [--keep]
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_bundles.h"
#include "bench_util.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/signing/sign_bundle.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

std::vector<std::string> files_of(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Timing {
  double wall = 0;
  double cpu = 0;  // user + system of every thread: what the work cost, however busy the machine was
};

// One `openssl dgst -sha256 FILE` after another: the sequential baseline.
Timing openssl_one_by_one(const std::vector<std::string>& files) {
  Timing out;
  for (const auto& file : files) {
    ChildRun run = run_child({"openssl", "dgst", "-sha256", file});
    if (run.status != 0) fail("openssl dgst failed on " + file);
    out.wall += run.seconds;
    out.cpu += run.cpu_seconds;
  }
  return out;
}

double process_cpu_seconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Timing time_hash_folder(const fs::path& dir, bool content_keys) {
  FolderHashOptions options;
  options.content_keys = content_keys;
  const double cpu = process_cpu_seconds();
  auto start = std::chrono::steady_clock::now();
  need(hash_folder(dir.string(), options));
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), process_cpu_seconds() - cpu};
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const BenchOptions options = parse_bench_options(argc, argv, /*gib=*/4.0, /*runs=*/3, /*parts=*/8);
  const fs::path fixtures = find_fixtures();
  if (fixtures.empty()) {
    std::printf("SKIPPED bench_sign: ../shared/fixtures not found (set PTB_FIXTURES)\n");
    return 0;
  }
  if (!fs::exists(options.cli)) {
    std::printf("SKIPPED bench_sign: no ptbundle binary at %s (pass --cli)\n", options.cli.c_str());
    return 0;
  }
  const uint64_t per_part = static_cast<uint64_t>(options.gib * (1ull << 30)) / static_cast<uint64_t>(options.parts);
  struct statvfs disk {};
  if (::statvfs(options.dir.c_str(), &disk) == 0 &&
      static_cast<double>(disk.f_bavail) * static_cast<double>(disk.f_frsize) < 2.2 * options.gib * (1ull << 30)) {
    std::printf("SKIPPED bench_sign: %s has less than %.1f GiB free\n", options.dir.c_str(), 2.2 * options.gib);
    return 0;
  }
  RemoveOnExit work{fs::path(options.dir) / ("ptbundle-bench-sign-" + std::to_string(::getpid())), options.keep};
  fs::create_directories(work.path);
  write_key(work.path / "key.pem", work.path / "pub.pem");
  const std::string key = (work.path / "key.pem").string(), pub = (work.path / "pub.pem").string();

  // The tiny bundle: one part, ExecuTorch's files as they are.
  const fs::path tiny = work.path / "tiny";
  export_bundle(options.cli, fixtures, fixtures / "cuda/named_sm90/encoder.ptd", tiny, 1);
  std::vector<double> sign_times, verify_times;
  for (int r = 0; r < 7; ++r) {
    ChildRun s = run_child({options.cli, "sign", tiny.string(), "--key", key});
    ChildRun v = run_child({options.cli, "verify", "--gpu", "none", "--key", pub, tiny.string()});
    if (s.status != 0 || v.status != 0) fail("sign or verify of the tiny bundle failed");
    sign_times.push_back(s.seconds);
    verify_times.push_back(v.seconds);
  }
  std::printf("tiny bundle (%zu files, %ju bytes): sign %.1f ms, verify --key %.1f ms (median of 7, whole process; goal < 50 ms)\n",
              files_of(tiny).size(), static_cast<uintmax_t>(need(hash_folder(tiny.string())).bytes),
              median(sign_times) * 1e3, median(verify_times) * 1e3);

  // The large one.
  const fs::path data = work.path / "source.ptd";
  write_named_sm90_data(fixtures, data, per_part);
  const fs::path bundle = work.path / "large";
  export_bundle(options.cli, fixtures, data, bundle, options.parts);
  fs::remove(data);
  if (run_child({options.cli, "sign", bundle.string(), "--key", key}).status != 0) fail("sign of the large bundle failed");
  const std::vector<std::string> files = files_of(bundle);
  uint64_t total = 0;
  for (const auto& file : files) total += fs::file_size(file);
  const double gb = static_cast<double>(total) / 1e9;
  std::printf("large bundle: %zu files, %.2f GiB (%d parts, each a %.0f MiB content-addressed weights blob), %u cores usable\n",
              files.size(), static_cast<double>(total) / (1ull << 30), options.parts,
              static_cast<double>(per_part) / (1 << 20), std::thread::hardware_concurrency());

  const std::vector<std::string> verify_argv = {options.cli, "verify", "--gpu", "none", "--key", pub, bundle.string()};
  openssl_one_by_one(files);  // into the page cache
  if (run_child(verify_argv).status != 0) fail("verify of the large bundle failed");
  std::vector<double> openssl, openssl_cpu, verify, verify_cpu, files_only, files_only_cpu, with_keys, with_keys_cpu;
  long peak_kib = 0;
  for (int r = 0; r < options.runs; ++r) {
    const Timing o = openssl_one_by_one(files);
    openssl.push_back(o.wall);
    openssl_cpu.push_back(o.cpu);
    ChildRun v = run_child(verify_argv);
    verify.push_back(v.seconds);
    verify_cpu.push_back(v.cpu_seconds);
    peak_kib = std::max(peak_kib, v.peak_kib);
    const Timing f = time_hash_folder(bundle, false);
    files_only.push_back(f.wall);
    files_only_cpu.push_back(f.cpu);
    const Timing k = time_hash_folder(bundle, true);
    with_keys.push_back(k.wall);
    with_keys_cpu.push_back(k.cpu);
  }
  // Wall ratios say what a user waits; on a machine shared with other work
  // they depend on the load, so the CPU seconds are printed beside them.
  const double base = median(openssl);
  std::printf("openssl dgst -sha256, one file after another: %.2f s (%.2f GB/s), CPU %.2f s\n", base, gb / base,
              median(openssl_cpu));
  std::printf("ptbundle verify --key (every check; files and content keys hashed once): %.2f s (%.2f GB/s), CPU %.2f s, "
              "peak RSS %ld MiB: ratio %.2fx\n",
              median(verify), gb / median(verify), median(verify_cpu), peak_kib / 1024, base / median(verify));
  std::printf("hash_folder, whole files only: %.2f s (%.2f GB/s), CPU %.2f s: ratio %.2fx\n", median(files_only),
              gb / median(files_only), median(files_only_cpu), base / median(files_only));
  std::printf("hash_folder, whole files + content-addressed blobs: %.2f s (%.2f GB/s), CPU %.2f s: ratio %.2fx\n",
              median(with_keys), gb / median(with_keys), median(with_keys_cpu), base / median(with_keys));
  return 0;
}
