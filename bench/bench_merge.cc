// How fast `ptbundle merge` proves and writes a merge, against `cat` of the
// same inputs (the cost of just reading them from the page cache) and
// against its physical limit, measured in the same run: every input byte
// read once with the reads spread across the cores (one `cat` per core,
// each of its share of the files, at once) plus every output byte written
// once (`dd` of as many bytes into a new file). Goal: within 1.3x of it.
//
// It makes its own inputs with ptbundle's writers from the real sm80 export
// (the program) and the real libraries in ../shared/fixtures/cuda/so: four
// regular variants (sm80, sm86, sm90, sm120) and a compute_75 PTX fallback,
// all sharing the same weights (2 GiB by default, in 64 tensors), in a
// temporary folder. Then it times the ptbundle binary (median of 5 runs, each
// a fresh process, peak resident memory from wait4) and `cat` of the inputs.
// ExecuTorch's merge of such inputs took 13.5 s here; the goal is < 2.7 s.
//
//   bench_merge [--gib N] [--runs N] [--cli PATH] [--dir DIR] [--keep]
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/variant_exports.h"
#include "bench_util.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A weights file with a pattern that varies across the file, written in 1 MiB
// pieces.
bool write_weights(const fs::path& path, uint64_t size) {
  std::ofstream out(path, std::ios::binary);
  std::vector<uint64_t> block((1u << 20) / sizeof(uint64_t));
  for (uint64_t done = 0; done < size; done += block.size() * sizeof(uint64_t)) {
    for (size_t i = 0; i < block.size(); ++i) block[i] = (done / 8 + i) * 0x9E3779B97F4A7C15ull;
    uint64_t left = std::min<uint64_t>(block.size() * sizeof(uint64_t), size - done);
    out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(left));
  }
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const BenchOptions options = parse_bench_options(argc, argv, /*gib=*/2.0, /*runs=*/5);
  fs::path fixtures = find_fixtures();
  if (fixtures.empty()) {
    std::printf("SKIPPED bench_merge: ../shared/fixtures not found (set PTB_FIXTURES)\n");
    return 0;
  }
  if (!fs::exists(options.cli)) {
    std::printf("SKIPPED bench_merge: no ptbundle binary at %s (pass --cli)\n", options.cli.c_str());
    return 0;
  }

  constexpr int kTensors = 64;
  uint64_t tensor = static_cast<uint64_t>(options.gib * (1ull << 30)) / kTensors / 4096 * 4096;
  uint64_t weights_size = tensor * kTensors;
  struct statvfs disk {};
  ::statvfs(options.dir.c_str(), &disk);
  uint64_t free_bytes = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
  if (free_bytes < weights_size * 8) {
    std::printf("SKIPPED bench_merge: %.1f GiB free in %s, need %.1f GiB\n", free_bytes / 1073741824.0,
                options.dir.c_str(), weights_size * 8 / 1073741824.0);
    return 0;
  }

  fs::path work = fs::path(options.dir) / ("ptbundle-bench-merge-" + std::to_string(::getpid()));
  fs::create_directories(work);
  RemoveOnExit cleanup{work, options.keep};
  std::printf("making inputs in %s: 4 variants + fallback sharing %.2f GiB of weights (%d tensors)\n",
              work.c_str(), weights_size / 1073741824.0, kTensors);
  if (!write_weights(work / "weights.bin", weights_size)) {
    std::printf("cannot write %s\n", (work / "weights.bin").c_str());
    return 1;
  }
  auto source = MappedFile::open((work / "weights.bin").string());
  if (!source.ok()) return std::printf("%s\n", source.error().message.c_str()), 1;

  struct Variant {
    const char* name;
    uint32_t sm;
    uint32_t ptx;
    const char* library;
  };
  const Variant variants[] = {{"sm80", 80, 0, "sm80.so"},
                              {"sm86", 86, 0, "sm86.so"},
                              {"sm90", 90, 0, "sm90.so"},
                              {"sm120", 120, 0, "sm120.so"},
                              {"fallback", 75, 75, "compute75.so"}};
  std::vector<std::string> inputs;
  std::vector<std::string> files;
  for (const Variant& v : variants) {
    test::ExportSpec spec;
    spec.libraries.push_back({v.sm, v.ptx, false, read_bytes(fixtures / "cuda/so" / v.library)});
    for (int t = 0; t < kTensors; ++t) {
      spec.weights.push_back({"layers." + std::to_string(t) + ".weight", &*source, t * tensor, tensor});
    }
    std::string pte = (work / (std::string(v.name) + ".pte")).string();
    std::string ptd = (work / (std::string(v.name) + ".ptd")).string();
    auto written = test::write_export((fixtures / "cuda/sm80/model.pte").string(), spec, pte, ptd);
    if (!written.ok()) return std::printf("%s\n", written.error().message.c_str()), 1;
    inputs.push_back(pte + "," + ptd);
    files.push_back(pte);
    files.push_back(ptd);
  }
  source = MappedFile();
  fs::remove(work / "weights.bin");

  std::vector<std::string> merge_argv = {options.cli, "merge", "-o", (work / "out.pte").string(), "--output-data",
                                         (work / "out.ptd").string()};
  for (size_t i = 0; i + 1 < inputs.size(); ++i) merge_argv.push_back(inputs[i]);
  merge_argv.push_back("--fallback");
  merge_argv.push_back(inputs.back());
  std::vector<std::string> cat_argv = {"/bin/cat"};
  cat_argv.insert(cat_argv.end(), files.begin(), files.end());

  run_child(cat_argv);  // into the page cache, as the goal assumes
  // The inputs split into one share per core, largest first onto the least loaded.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> by_size = files;
  std::sort(by_size.begin(), by_size.end(), [](const std::string& a, const std::string& b) { return fs::file_size(a) > fs::file_size(b); });
  std::vector<std::vector<std::string>> shares(cores, std::vector<std::string>{"/bin/cat"});
  std::vector<uint64_t> share_bytes(cores, 0);
  for (const std::string& file : by_size) {
    const size_t least = static_cast<size_t>(std::min_element(share_bytes.begin(), share_bytes.end()) - share_bytes.begin());
    shares[least].push_back(file);
    share_bytes[least] += fs::file_size(file);
  }
  auto parallel_read = [&] {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> readers;
    for (const auto& share : shares)
      if (share.size() > 1) readers.emplace_back([&share] { run_child(share); });
    for (auto& reader : readers) reader.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> merge_times, cat_times, merge_cpu, cat_cpu, read_times, write_times;
  long peak_kib = 0;
  for (int run = 0; run < options.runs; ++run) {
    fs::remove(work / "out.pte");
    fs::remove(work / "out.ptd");
    ChildRun merged = run_child(merge_argv);
    if (merged.status != 0) {
      std::printf("ptbundle merge failed with exit code %d\n", merged.status);
      return 1;
    }
    merge_times.push_back(merged.seconds);
    merge_cpu.push_back(merged.cpu_seconds);
    peak_kib = std::max(peak_kib, merged.peak_kib);
    ChildRun cat = run_child(cat_argv);
    cat_times.push_back(cat.seconds);
    cat_cpu.push_back(cat.cpu_seconds);
    read_times.push_back(parallel_read());
    const uint64_t out_bytes = fs::file_size(work / "out.pte") + fs::file_size(work / "out.ptd");
    ChildRun written = run_child({"dd", "if=/dev/zero", "of=" + (work / "limit.bin").string(), "bs=1M",
                                  "count=" + std::to_string((out_bytes + (1 << 20) - 1) >> 20), "status=none"});
    fs::remove(work / "limit.bin");
    write_times.push_back(written.seconds);
  }
  double merge_s = median(merge_times);
  double cat_s = median(cat_times);
  uint64_t input_bytes = 0;
  for (const std::string& file : files) input_bytes += fs::file_size(file);
  std::printf("inputs: %zu files, %.2f GiB\n", files.size(), input_bytes / 1073741824.0);
  std::printf("ptbundle merge: %.3f s (median of %d)   cat of the inputs: %.3f s   ratio %.2fx cat\n", merge_s,
              options.runs, cat_s, merge_s / cat_s);
  const double limit = median(read_times) + median(write_times);
  std::printf("limit: every input read once on %u cores %.3f s + the output written once %.3f s = %.3f s   "
              "ptbundle merge / limit %.2fx (goal <= 1.30x)%s\n",
              cores, median(read_times), median(write_times), limit, merge_s / limit, merge_s / limit <= 1.3 ? "" : "  MISSED");
  std::printf("cpu time (user + system): merge %.3f s, cat %.3f s (medians)\n", median(merge_cpu), median(cat_cpu));
  std::printf("peak resident memory of ptbundle merge: %.1f MiB (goal < 64 MiB)\n", peak_kib / 1024.0);
  std::printf("goal: under 2.7 s (ExecuTorch's merge: 13.5 s): %s\n", merge_s < 2.7 ? "met" : "NOT met");
  if (options.keep) {
    std::printf("inputs kept in %s; the merge command:\n ", work.c_str());
    for (const std::string& arg : merge_argv) std::printf(" %s", arg.c_str());
    std::printf("\n");
  }
  return 0;
}
