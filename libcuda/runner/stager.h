// Host-to-device copies staged through small pinned buffers by a few
// threads, each queueing its DMA on its own stream (staged_upload.cc says
// why). The weights of a part are uploaded this way. Built into the runtime
// modules and bench_upload, which link a CUDA runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

struct HostToDevice {
  Bytes source;
  void* device = nullptr;
};

enum class Pinning {
  HostAlloc,  // cudaHostAlloc
  HugePages,  // transparent huge pages, then cudaHostRegister
};

struct StagingOptions {
  int threads = 4;             // each fills its own pinned buffers
  int buffers_per_thread = 2;  // one being filled while the other is in flight
  uint64_t chunk_bytes = 4ull << 20;
  Pinning pinning = Pinning::HostAlloc;
};

class Stager {
 public:
  // Pins threads x buffers_per_thread x chunk_bytes of host memory and
  // starts the threads.
  static Result<std::unique_ptr<Stager>> create(int device, const StagingOptions& options);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Every copy done (or failed) when it returns.
  Status copy(std::span<const HostToDevice> copies);
  double setup_ms() const { return setup_ms_; }
  const StagingOptions& options() const { return options_; }
  // Calls of copy() so far and the time spent in them.
  uint64_t calls() const { return calls_; }
  double busy_ms() const { return busy_ms_; }
  // The CPUs its threads run on (those near the GPU); empty: any.
  const std::vector<int>& cpus() const { return near_cpus_; }

 private:
  struct Lane;
  struct Pool;
  Stager() = default;
  void serve(size_t lane);
  int device_ = 0;
  StagingOptions options_;
  std::vector<int> near_cpus_;
  std::vector<Lane> lanes_;
  std::unique_ptr<Pool> pool_;
  double setup_ms_ = 0;
  uint64_t calls_ = 0;
  double busy_ms_ = 0;
};

// What a load uses: up to 8 threads (half the CPUs, at least 2), each with
// two 4 MiB buffers on huge pages (bench/bench_upload.cc compares the
// choices).
StagingOptions default_staging_options();

// The CPUs this process may use on the GPU's NUMA node; empty when unknown,
// or when they are all of them.
std::vector<int> cpus_near_gpu(int device);

// Stager::create, then copy.
Status staged_upload(std::span<const HostToDevice> copies, int device, const StagingOptions& options);

}  // namespace ptb::detail
