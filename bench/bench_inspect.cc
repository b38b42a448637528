// inspect must cost the same whatever the size of the blobs: it reads the
// flatbuffer and the headers, never the blob bytes (unless --sha256). This
// builds, in a temporary folder, a .ptd with 4 GiB of blobs and a .pte with
// 1 GiB of segments (sparse files: the blobs are holes), and 4 MiB files of
// the same structure, then prints time and peak memory of inspecting each
// and their ratios, which should be near 1. Then the --sha256 hashing rate
// on one core. Each measurement runs in a child process so that its peak
// RSS is its own.
//
// Last, `ptbundle inspect --sha256` as a user runs it, of a bundle exported
// from ExecuTorch's named_sm90 export with --gib GiB of weights under their
// content address, and of that bundle's data file alone, each against its
// physical limit measured in the same run: every file hashed once, files in
// parallel across the cores (hash_folder without the blob streams; one
// file's SHA-256 is one sequential stream, so a bundle of one large file
// cannot go faster than one core hashing it once). verify of the same bundle
// is shown beside them. Medians of --runs runs, the files in the page cache.
//
//   bench_inspect [--gib N] [--runs N] [--cli PATH] [--dir DIR] [--keep]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/fb/program_generated.h"
#include "ptbundle/base/file.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/signing/folder_digests.h"
#include "../tests/flatbuffer_layout.h"
#include "bench_bundles.h"
#include "bench_util.h"

namespace fs = std::filesystem;
using namespace ptb;
using ptb::test::put_u32;
using ptb::test::put_u64;
using ptb::test::ptd_header;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kBlobs = 64;

uint64_t align_to(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }


// The finished flatbuffer with `header` spliced in after its identifier, as
// ExecuTorch's serializers lay files out.
std::vector<uint8_t> splice(const flatbuffers::FlatBufferBuilder& builder, const std::vector<uint8_t>& header) {
  return ptb::test::splice_flatbuffer(builder.GetBufferPointer(), builder.GetSize(), header,
                                      builder.GetSize() + header.size(), Bytes());
}

// Writes `head` and extends the file to `size` with a hole.
void write_sparse(const fs::path& path, const std::vector<uint8_t>& head, uint64_t size) {
  auto out = AtomicOutput::create(path.string());
  if (!out.ok() || !out->write(Bytes(head.data(), head.size())).ok() || !out->commit().ok()) {
    std::fprintf(stderr, "bench_inspect: cannot write %s\n", path.c_str());
    std::exit(3);
  }
  if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
    std::perror("truncate");
    std::exit(3);
  }
}

// kBlobs float32 tensors of `blob_size` bytes each, 128-aligned, with layouts.
void make_ptd(const fs::path& path, uint64_t blob_size) {
  fb::ptd::FlatTensorT tensor;
  for (int i = 0; i < kBlobs; ++i) {
    auto segment = std::make_unique<fb::ptd::DataSegmentT>();
    segment->offset = static_cast<uint64_t>(i) * blob_size;
    segment->size = blob_size;
    tensor.segments.push_back(std::move(segment));
    auto entry = std::make_unique<fb::ptd::NamedDataT>();
    entry->key = "cuda_fqn_weight:cuda:layers." + std::to_string(i) + ".weight";
    entry->segment_index = static_cast<uint32_t>(i);
    entry->tensor_layout = std::make_unique<fb::ptd::TensorLayoutT>();
    entry->tensor_layout->scalar_type = fb::ScalarType::FLOAT;
    entry->tensor_layout->sizes = {static_cast<int32_t>(blob_size / 4 / 1024), 1024};
    entry->tensor_layout->dim_order = {0, 1};
    tensor.named_data.push_back(std::move(entry));
  }
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::ptd::FlatTensor::Pack(builder, &tensor), fb::ptd::FlatTensorIdentifier());
  uint64_t base = align_to(builder.GetSize() + 48, 128);
  write_sparse(path, splice(builder, ptd_header(builder.GetSize(), base, kBlobs * blob_size)), base + kBlobs * blob_size);
}

// One method whose kBlobs named-data segments hold `blob_size` bytes each.
void make_pte(const fs::path& path, uint64_t blob_size) {
  fb::ProgramT program;
  auto plan = std::make_unique<fb::ExecutionPlanT>();
  plan->name = "forward";
  for (int i = 0; i < 2; ++i) {
    auto value = std::make_unique<fb::EValueT>();
    fb::TensorT tensor;
    tensor.scalar_type = fb::ScalarType::FLOAT;
    tensor.sizes = {4, 32};
    tensor.dim_order = {0, 1};
    value->val.Set(std::move(tensor));
    plan->values.push_back(std::move(value));
  }
  plan->inputs = {0};
  plan->outputs = {1};
  plan->non_const_buffer_sizes = {0};
  program.execution_plan.push_back(std::move(plan));
  for (int i = 0; i < kBlobs; ++i) {
    auto segment = std::make_unique<fb::DataSegmentT>();
    segment->offset = static_cast<uint64_t>(i) * blob_size;
    segment->size = blob_size;
    program.segments.push_back(std::move(segment));
    auto entry = std::make_unique<fb::NamedDataT>();
    entry->key = "blob_" + std::to_string(i);
    entry->segment_index = static_cast<uint32_t>(i);
    program.named_data.push_back(std::move(entry));
  }
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Program::Pack(builder, &program), fb::ProgramIdentifier());
  uint64_t program_size = builder.GetSize() + 32;
  uint64_t base = align_to(program_size, 128);
  std::vector<uint8_t> header(32, 0);
  std::memcpy(header.data(), "eh00", 4);
  put_u32(header, 4, 32);
  put_u64(header, 8, program_size);
  put_u64(header, 16, base);
  put_u64(header, 24, kBlobs * blob_size);
  write_sparse(path, splice(builder, header), base + kBlobs * blob_size);
}

struct Measure {
  double seconds = 0;      // per inspect call, median of the calls
  double cpu_seconds = 0;  // user + system time of the child, all calls
  long peak_rss_kib = 0;
};

// Runs `calls` inspect calls in a child process; its own peak RSS comes back through wait4.
Measure measure(const fs::path& path, bool sha256, int calls) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) std::exit(3);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    InspectOptions options;
    options.sha256 = sha256;
    std::vector<double> times;
    for (int i = 0; i < calls; ++i) {
      auto start = std::chrono::steady_clock::now();
      auto result = inspect_path(path.string(), options);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!result.ok()) {
        std::fprintf(stderr, "bench_inspect: %s\n", result.error().message.c_str());
        ::_exit(1);
      }
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    if (::write(pipe_fds[1], &median, sizeof median) != sizeof median) ::_exit(3);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  Measure m;
  if (::read(pipe_fds[0], &m.seconds, sizeof m.seconds) != sizeof m.seconds) m.seconds = -1;
  ::close(pipe_fds[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
  m.peak_rss_kib = usage.ru_maxrss;
  m.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return m;
}

void compare(const char* what, const fs::path& large, const fs::path& small) {
  Measure big = measure(large, false, 21);
  Measure little = measure(small, false, 21);
  std::printf("%-26s %9.3f ms %8ld KiB   (4 MiB file: %7.3f ms %8ld KiB)   time x%.2f  peak RSS x%.2f\n", what,
              big.seconds * 1e3, big.peak_rss_kib, little.seconds * 1e3, little.peak_rss_kib,
              big.seconds / little.seconds, static_cast<double>(big.peak_rss_kib) / little.peak_rss_kib);
}

}  // namespace

// `ptbundle inspect --sha256` of a bundle and of its data file against
// hashing each file once across the cores, and verify of the bundle.
void cli_rows(const ptb::bench::BenchOptions& options, const fs::path& dir) {
  using namespace ptb::bench;
  const fs::path fixtures = find_fixtures();
  if (fixtures.empty() || !fs::exists(options.cli)) {
    std::printf("SKIPPED inspect --sha256 of a bundle: needs the fixtures (PTB_FIXTURES) and the ptbundle binary (--cli)\n");
    return;
  }
  const auto blob = static_cast<uint64_t>(options.gib * static_cast<double>(kGiB));
  write_named_sm90_data(fixtures, dir / "data.ptd", blob);
  const fs::path bundle = dir / "bundle";
  ChildRun exported = run_child({options.cli, "export", "-o", bundle.string(), "--part",
                                 "part0=" + (fixtures / "cuda/named_sm90/model.pte").string() + "," + (dir / "data.ptd").string()});
  fs::remove(dir / "data.ptd");
  if (exported.status != 0) fail("ptbundle export of the bundle failed");
  const fs::path data = bundle / "part0.ptd";
  std::vector<std::string> cat = {"cat"};
  for (const auto& entry : fs::recursive_directory_iterator(bundle))
    if (entry.is_regular_file()) cat.push_back(entry.path().string());
  run_child(cat);  // into the page cache
  auto timed = [](auto&& body) {
    auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> bundle_s, file_s, verify_s, bundle_limit, file_limit;
  for (int run = 0; run < options.runs; ++run) {
    for (auto [times, argv] : {std::pair{&bundle_s, std::vector<std::string>{options.cli, "inspect", "--sha256", "--json", bundle.string()}},
                               std::pair{&file_s, std::vector<std::string>{options.cli, "inspect", "--sha256", "--json", data.string()}},
                               std::pair{&verify_s, std::vector<std::string>{options.cli, "verify", "--gpu", "none", bundle.string()}}}) {
      ChildRun child = run_child(argv);
      if (child.status != 0) fail(argv[1] + " of " + argv.back() + " failed with exit code " + std::to_string(child.status));
      times->push_back(child.seconds);
    }
    FolderHashOptions once;
    once.content_keys = false;
    bundle_limit.push_back(timed([&] { need(hash_folder(bundle.string(), once)); }));
    file_limit.push_back(timed([&] { need(sha256_file(data.string())); }));
  }
  std::printf("\nptbundle inspect --sha256 (CLI), %.2f GiB of weights, medians of %d runs, against every file hashed once across %u cores\n",
              options.gib, options.runs, std::thread::hardware_concurrency());
  std::printf("%-28s %10s %10s %8s\n", "", "ptbundle", "limit", "ratio");
  auto row = [](const char* what, double ours, double limit) {
    std::printf("%-28s %9.2fs %9.2fs %7.2fx%s\n", what, ours, limit, ours / limit, ours / limit <= 1.3 ? "" : "  (goal <= 1.30x) MISSED");
  };
  row("inspect --sha256 bundle", median(bundle_s), median(bundle_limit));
  row("inspect --sha256 data file", median(file_s), median(file_limit));
  row("verify bundle", median(verify_s), median(bundle_limit));
}

int main(int argc, char** argv) {
  const ptb::bench::BenchOptions options = ptb::bench::parse_bench_options(argc, argv, /*gib=*/1.0, /*runs=*/3);
  const bool keep = options.keep;
  const fs::path dir = fs::path(options.dir) / ("ptbundle-bench-inspect-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto big_ptd = dir / "big.ptd", small_ptd = dir / "small.ptd";
  auto big_pte = dir / "big.pte", small_pte = dir / "small.pte";
  make_ptd(big_ptd, 4 * kGiB / kBlobs);
  make_ptd(small_ptd, 4 * kMiB / kBlobs);
  make_pte(big_pte, kGiB / kBlobs);
  make_pte(small_pte, 4 * kMiB / kBlobs);

  std::printf("inspect, in process, median of 21 calls; peak RSS of a child process doing them\n");
  compare(".ptd, 4 GiB in 64 blobs", big_ptd, small_ptd);
  compare(".pte, 1 GiB in 64 segments", big_pte, small_pte);

  // --sha256: every blob and the whole file are hashed, streamed through a
  // small buffer. The rate is also given per second of CPU time, which does not
  // depend on what else the machine runs. Holes read as zero pages the kernel
  // must clear, so the last file, with real bytes, is the common case.
  auto real_ptd = dir / "real.ptd";
  make_ptd(real_ptd, kGiB / kBlobs);
  {
    auto out = AtomicOutput::create((dir / "fill").string());
    std::vector<uint8_t> chunk(8 * kMiB);
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    // The same header and flatbuffer, then the blob bytes written out.
    auto head = MappedFile::open(real_ptd.string());
    uint64_t base = head->size() - kGiB;
    if (!head.ok() || !out.ok() || !out->copy_from(*head, 0, base).ok()) std::exit(3);
    for (uint64_t done = 0; done < kGiB; done += chunk.size()) {
      if (!out->write(Bytes(chunk.data(), chunk.size())).ok()) std::exit(3);
    }
    if (!out->commit().ok()) std::exit(3);
    fs::rename(dir / "fill", real_ptd);
  }
  struct Hashed {
    const char* what;
    fs::path path;
  };
  for (const auto& [what, path] : {Hashed{"1 GiB .pte (sparse)", big_pte}, Hashed{"4 GiB .ptd (sparse)", big_ptd},
                                   Hashed{"1 GiB .ptd (real bytes)", real_ptd}}) {
    Measure hashed = measure(path, true, 1);
    double gigabytes = 2.0 * static_cast<double>(fs::file_size(path)) / 1e9;  // each blob, then the whole file
    std::printf("inspect --sha256, %-24s %6.2f GB in %5.2f s = %.2f GB/s; per CPU second %.2f GB/s; peak RSS %ld KiB\n",
                what, gigabytes, hashed.seconds, gigabytes / hashed.seconds, gigabytes / hashed.cpu_seconds,
                hashed.peak_rss_kib);
  }

  std::fflush(stdout);
  cli_rows(options, dir);
  if (!keep) fs::remove_all(dir);
  else std::printf("kept %s\n", dir.c_str());
  return 0;
}
