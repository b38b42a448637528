// inspect must cost the same whatever the size of the blobs: it reads the
// flatbuffer and the headers, never the blob bytes (unless --sha256). This
// builds, in a temporary folder, a .ptd with 4 GiB of blobs and a .pte with
// 1 GiB of segments (sparse files: the blobs are holes), and 4 MiB files of
// the same structure, then prints time and peak memory of inspecting each
// and their ratios, which should be near 1. Then the --sha256 hashing rate
// on one core. Each measurement runs in a child process so that its peak
// RSS is its own.
//
//   bench_inspect [--keep DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/fb/program_generated.h"
#include "ptbundle/base/file.h"
#include "ptbundle/inspect/inspect.h"
#include "../tests/flatbuffer_layout.h"

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

int main(int argc, char** argv) {
  fs::path dir;
  bool keep = argc == 3 && std::string(argv[1]) == "--keep";
  if (keep) {
    dir = argv[2];
    fs::create_directories(dir);
  } else {
    dir = fs::temp_directory_path() / ("ptbundle-bench-inspect-" + std::to_string(::getpid()));
    fs::create_directory(dir);
  }
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

  if (!keep) fs::remove_all(dir);
  return 0;
}
