// Ways to get a mapped weights file onto the GPU, each against the pinned
// host-to-device rate measured in the same run (goal: weight upload at
// >= 50% of it). Built only with LibTorch (for the CUDA runtime it brings).
//
//   pageable      cudaMemcpy from a fresh mapping, 64 MiB at a time: what
//                 AOTInductor's update_constants_from_blob does
//   populated     the same after madvise(MADV_POPULATE_READ) on the mapping
//   anonymous     cudaMemcpy from the bytes read into anonymous memory
//                 (huge pages where the kernel gives them)
//   staged        ptbundle's Stager: T threads fill small pinned buffers from
//                 the mapping and queue the copies; shown with and without
//                 the pinning of its buffers, which a load pays once
// Pinning itself is measured too: cudaHostAlloc, and cudaHostRegister of
// huge-page memory. (Registering a large file mapping itself takes longer
// than any of these, so it is not tried.)
//
// The file is in the page cache (just written): these are the rates of a
// warm load, the case a robot restarting a model cares about.
//
//   bench_upload [--mib N] [--only NAME]
#include <cstdio>
#include <string>

#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"

#if !defined(PTB_HAVE_LIBTORCH)

int main() {
  std::printf("bench_upload: skipped: %s\n", ptb::runner_unavailable_reason().c_str());
  return 0;
}

#else

#include "runner/stager.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "ptbundle/base/file.h"
#include "bench_util.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;
using namespace ptb::detail;
using Clock = std::chrono::steady_clock;

namespace {

void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(code));
}

// Pinning a file mapping is the step most likely to hang in a container;
// a step that takes longer than this ends the bench with its name.
class Watchdog {
 public:
  explicit Watchdog(double seconds) : seconds_(seconds), thread_([this] { watch(); }) {}
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void step(const char* name) {
    name_ = name;
    started_ = Clock::now().time_since_epoch().count();
  }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto started = Clock::time_point(Clock::duration(started_.load()));
      if (started_.load() != 0 && std::chrono::duration<double>(Clock::now() - started).count() > seconds_) {
        std::printf("STALLED: %s took over %.0f s; stopping\n", name_.load(), seconds_);
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  }
  double seconds_;
  std::atomic<bool> stop_{false};
  std::atomic<const char*> name_{""};
  std::atomic<Clock::rep> started_{0};
  std::thread thread_;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Bench {
  std::string path;
  uint64_t bytes = 0;
  void* device = nullptr;
  double pinned = 0;
  std::string only;
  Watchdog* watchdog = nullptr;

  // Best of `repeats`, each on a fresh mapping of the file; `body` returns
  // extra text for the line.
  void measure(const char* name, int repeats, const std::function<std::string(const MappedFile&)>& body) {
    if (!only.empty() && std::string(name).find(only) == std::string::npos) return;
    watchdog->step(name);
    double best = 1e30;
    std::string note;
    for (int i = 0; i < repeats; ++i) {
      MappedFile file = need(MappedFile::open(path));
      check(cudaDeviceSynchronize(), "sync");
      auto start = Clock::now();
      std::string said = body(file);
      check(cudaDeviceSynchronize(), name);
      const double ms = ms_since(start);
      if (ms < best) {
        best = ms;
        note = said;
      }
    }
    const double rate = static_cast<double>(bytes) / (best / 1000) / 1e9;
    std::printf("  %-34s %8.1f ms %6.1f GB/s = %3.0f%% of pinned%s%s\n", name, best, rate, 100 * rate / pinned,
                note.empty() ? "" : "  ", note.c_str());
    watchdog->step("");
  }
};

void pageable_copy(const MappedFile& file, void* device) {
  const uint64_t piece = 64ull << 20;
  for (uint64_t done = 0; done < file.size(); done += piece)
    check(cudaMemcpy(static_cast<uint8_t*>(device) + done, file.bytes().data() + done,
                     std::min(piece, file.size() - done), cudaMemcpyHostToDevice),
          "cudaMemcpy");
}

double pin_ms(uint64_t bytes, Pinning pinning) {
  StagingOptions options;
  options.threads = 1;
  options.buffers_per_thread = 1;
  options.chunk_bytes = bytes;
  options.pinning = pinning;
  auto stager = need(Stager::create(0, options));
  return stager->setup_ms();
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  uint64_t mib = 1024;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mib") mib = std::stoull(value);
    else if (flag == "--only") only = value;
    else fail("unknown option " + flag);
  }
  CudaDeviceInfo gpu = need(cuda_device(0));
  Watchdog watchdog(30);
  Bench bench;
  bench.bytes = mib << 20;
  bench.only = only;
  bench.watchdog = &watchdog;
  bench.path = (fs::temp_directory_path() / "bench_upload_weights.bin").string();
  {
    std::vector<uint8_t> chunk(64 << 20);
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    AtomicOutput out = need(AtomicOutput::create(bench.path));
    for (uint64_t done = 0; done < bench.bytes; done += chunk.size())
      need(out.write(Bytes(chunk.data(), std::min<uint64_t>(chunk.size(), bench.bytes - done))));
    need(out.commit());
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaMalloc(&bench.device, bench.bytes), "cudaMalloc");
  bench.pinned = need(pinned_upload_gb_per_second(bench.bytes, 0, 5));
  std::printf("bench_upload on %s (%s): %llu MiB from a file in the page cache; pinned %.1f GB/s (reference)\n",
              gpu.name.c_str(), gpu.capability.name().c_str(), static_cast<unsigned long long>(mib), bench.pinned);
  const std::vector<int> near = cpus_near_gpu(0);
  std::printf("  staging threads run on %s\n",
              near.empty() ? "any CPU (the GPU's NUMA node is unknown or has them all)"
                           : (std::to_string(near.size()) + " CPUs near the GPU, from " + std::to_string(near.front()))
                                 .c_str());

  watchdog.step("pinning");
  for (uint64_t size_mib : {4, 32, 256}) {
    const double alloc = pin_ms(size_mib << 20, Pinning::HostAlloc);
    const double huge = pin_ms(size_mib << 20, Pinning::HugePages);
    std::printf("  pinning %3llu MiB: cudaHostAlloc %7.1f ms (%5.1f GB/s), huge pages + register %7.1f ms (%5.1f GB/s)\n",
                static_cast<unsigned long long>(size_mib), alloc, static_cast<double>(size_mib << 20) / (alloc / 1000) / 1e9, huge,
                static_cast<double>(size_mib << 20) / (huge / 1000) / 1e9);
  }
  watchdog.step("");

  void* device = bench.device;
  bench.measure("pageable (cudaMemcpy from mapping)", 3, [&](const MappedFile& file) {
    pageable_copy(file, device);
    return std::string();
  });
  {
    void* anonymous = std::aligned_alloc(2 << 20, bench.bytes);
    ::madvise(anonymous, bench.bytes, MADV_HUGEPAGE);
    bench.measure("anonymous (cudaMemcpy, read before)", 3, [&](const MappedFile& file) {
      auto start = Clock::now();
      std::memcpy(anonymous, file.bytes().data(), file.size());
      const double read_ms = ms_since(start);
      start = Clock::now();
      check(cudaMemcpy(device, anonymous, file.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      const double copy_ms = ms_since(start);
      return "read " + std::to_string(read_ms) + " ms, copy alone " +
             std::to_string(static_cast<double>(file.size()) / (copy_ms / 1000) / 1e9) + " GB/s";
    });
    std::free(anonymous);
  }
  struct Variant {
    int threads;
    int buffers;
    uint64_t chunk_mib;
    Pinning pinning;
  };
  const Variant variants[] = {
      {4, 2, 4, Pinning::HostAlloc}, {4, 2, 4, Pinning::HugePages}, {4, 2, 2, Pinning::HugePages},
      {8, 2, 2, Pinning::HugePages}, {8, 2, 4, Pinning::HugePages}, {12, 2, 2, Pinning::HugePages},
      {4, 3, 2, Pinning::HugePages}, {8, 3, 2, Pinning::HugePages}, {8, 2, 1, Pinning::HostAlloc},
  };
  for (const Variant& variant : variants) {
    StagingOptions options;
    options.threads = variant.threads;
    options.buffers_per_thread = variant.buffers;
    options.chunk_bytes = variant.chunk_mib << 20;
    options.pinning = variant.pinning;
    const std::string label = "staged T=" + std::to_string(variant.threads) + " x" + std::to_string(variant.buffers) +
                              " x" + std::to_string(variant.chunk_mib) + " MiB " +
                              (variant.pinning == Pinning::HugePages ? "huge" : "alloc");
    double setup = 0;
    bench.measure((label + " +pinning").c_str(), 3, [&](const MappedFile& file) {
      auto stager = need(Stager::create(0, options));
      setup = stager->setup_ms();
      HostToDevice copy{file.bytes(), device};
      need(stager->copy(std::span<const HostToDevice>(&copy, 1)));
      return "pinning " + std::to_string(setup) + " ms";
    });
    auto stager = need(Stager::create(0, options));
    bench.measure((label + " copy only").c_str(), 3, [&](const MappedFile& file) {
      HostToDevice copy{file.bytes(), device};
      need(stager->copy(std::span<const HostToDevice>(&copy, 1)));
      return std::string();
    });
  }
  // How AOTInductor's blob loading drives the stager: one synchronous copy
  // per constant (64 MiB here), against the whole at once.
  for (bool per_constant : {false, true}) {
    auto stager = need(Stager::create(0, default_staging_options()));
    bench.measure(per_constant ? "default staging, 64 MiB calls" : "default staging, one call", 3,
                  [&](const MappedFile& file) {
                    const uint64_t piece = per_constant ? 64ull << 20 : file.size();
                    for (uint64_t done = 0; done < file.size(); done += piece) {
                      HostToDevice copy{file.bytes().subspan(done, std::min(piece, file.size() - done)),
                                        static_cast<uint8_t*>(device) + done};
                      need(stager->copy(std::span<const HostToDevice>(&copy, 1)));
                    }
                    return std::string();
                  });
  }
  cudaFree(bench.device);
  ::unlink(bench.path.c_str());
  return 0;
}

#endif
