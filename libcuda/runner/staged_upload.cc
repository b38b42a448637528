// Host-to-device copies through pinned staging buffers.
//
// A copy from pageable memory is staged by the driver through its own pinned
// buffer, one piece at a time, the CPU copy and the DMA taking turns: a
// fraction of the rate from pinned memory. Pinning the source instead costs
// more than the copy (pinning runs slower than the bus, and registering a
// large file mapping takes longer still). So a few threads each
// fill small pinned buffers of their own and queue the DMA on their own
// stream: the memcpy of the next piece overlaps the transfer of the last, and
// the threads together read the page cache faster than one can.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "runner/cuda_error.h"
#include "runner/stager.h"

namespace ptb::detail {
namespace {

struct Fragment {
  const uint8_t* source;
  uint8_t* device;
  uint64_t length;
};

// What one staging buffer carries at a time: pieces of one or more copies,
// at most chunk_bytes in all.
using Chunk = std::vector<Fragment>;

std::vector<Chunk> plan_chunks(std::span<const HostToDevice> copies, uint64_t chunk_bytes) {
  std::vector<Chunk> chunks(1);
  uint64_t filled = 0;
  for (const HostToDevice& copy : copies) {
    uint64_t offset = 0;
    while (offset < copy.source.size()) {
      if (filled == chunk_bytes) {
        chunks.emplace_back();
        filled = 0;
      }
      const uint64_t length = std::min<uint64_t>(copy.source.size() - offset, chunk_bytes - filled);
      chunks.back().push_back({copy.source.data() + offset, static_cast<uint8_t*>(copy.device) + offset, length});
      offset += length;
      filled += length;
    }
  }
  if (chunks.back().empty()) chunks.pop_back();
  return chunks;
}

std::string cuda_text(const char* call, cudaError_t code) { return std::string(call) + ": " + cuda_error(code); }

constexpr uint64_t kHugePage = 2ull << 20;

// "0-3,8,10-11" (the kernel's cpulist format) as CPU numbers; empty on
// anything unexpected.
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  size_t at = 0;
  while (at < text.size() && text[at] != '\n') {
    char* end = nullptr;
    long first = std::strtol(text.c_str() + at, &end, 10);
    long last = first;
    if (end == text.c_str() + at || first < 0) return {};
    at = static_cast<size_t>(end - text.c_str());
    if (at < text.size() && text[at] == '-') {
      last = std::strtol(text.c_str() + at + 1, &end, 10);
      if (last < first || last >= CPU_SETSIZE) return {};
      at = static_cast<size_t>(end - text.c_str());
    }
    for (long cpu = first; cpu <= last; ++cpu) cpus.push_back(static_cast<int>(cpu));
    if (at < text.size() && text[at] == ',') ++at;
  }
  return cpus;
}

}  // namespace

// The CPUs this process may use that sit on the GPU's NUMA node (its PCI
// device's local_cpulist); empty when that is unknown or leaves none.
std::vector<int> cpus_near_gpu(int device) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  std::string path = "/sys/bus/pci/devices/" + std::string(bus_id) + "/local_cpulist";
  for (char& c : path) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream file(path);
  std::string text;
  if (!std::getline(file, text)) return {};
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> near;
  for (int cpu : parse_cpu_list(text))
    if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) near.push_back(cpu);
  // All of them: pinning adds nothing and hides nothing.
  if (static_cast<int>(near.size()) == CPU_COUNT(&allowed)) return {};
  return near;
}

// One thread's pinned buffers and stream.
struct Stager::Lane {
  uint8_t* pinned = nullptr;
  uint64_t pinned_bytes = 0;
  bool registered = false;  // cudaHostRegister'ed (else cudaHostAlloc'ed)
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> done;  // one per buffer
  std::vector<bool> in_flight;
  std::string failure;

  std::string open(int device, const StagingOptions& options) {
    cudaError_t code = cudaSetDevice(device);
    if (code != cudaSuccess) return cuda_text("cudaSetDevice", code);
    code = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (code != cudaSuccess) return cuda_text("cudaStreamCreate", code);
    pinned_bytes = options.chunk_bytes * static_cast<uint64_t>(options.buffers_per_thread);
    if (options.pinning == Pinning::HugePages) {
      // Transparent huge pages make pinning a matter of a few large pages.
      const uint64_t rounded = (pinned_bytes + kHugePage - 1) / kHugePage * kHugePage;
      void* memory = std::aligned_alloc(kHugePage, rounded);
      if (!memory) return "cannot allocate " + std::to_string(rounded) + " bytes of host memory";
      ::madvise(memory, rounded, MADV_HUGEPAGE);
      std::memset(memory, 0, rounded);
      code = cudaHostRegister(memory, rounded, cudaHostRegisterDefault);
      if (code == cudaSuccess) {
        pinned = static_cast<uint8_t*>(memory);
        registered = true;
      } else {
        // Some systems refuse to register memory; cudaHostAlloc still works there.
        cudaGetLastError();
        std::free(memory);
      }
    }
    if (!pinned) {
      void* memory = nullptr;
      code = cudaHostAlloc(&memory, pinned_bytes, cudaHostAllocDefault);
      if (code != cudaSuccess) return cuda_text("cudaHostAlloc", code);
      pinned = static_cast<uint8_t*>(memory);
    }
    done.assign(static_cast<size_t>(options.buffers_per_thread), nullptr);
    in_flight.assign(done.size(), false);
    for (cudaEvent_t& event : done) {
      code = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (code != cudaSuccess) return cuda_text("cudaEventCreate", code);
    }
    return "";
  }

  void close() {
    for (cudaEvent_t event : done)
      if (event) cudaEventDestroy(event);
    if (stream) cudaStreamDestroy(stream);
    if (pinned && registered) {
      cudaHostUnregister(pinned);
      std::free(pinned);
    } else if (pinned) {
      cudaFreeHost(pinned);
    }
  }

  // Chunks first, first + step, ...; returns "" or what failed. Waits for
  // its copies on every path: the buffers may not be refilled or freed while
  // a transfer still reads them.
  std::string carry(const std::vector<Chunk>& chunks, size_t first, size_t step, uint64_t chunk_bytes) {
    std::string failed = queue(chunks, first, step, chunk_bytes);
    cudaError_t code = cudaStreamSynchronize(stream);
    std::fill(in_flight.begin(), in_flight.end(), false);
    if (failed.empty() && code != cudaSuccess) failed = cuda_text("cudaMemcpyAsync", code);
    return failed;
  }

  std::string queue(const std::vector<Chunk>& chunks, size_t first, size_t step, uint64_t chunk_bytes) {
    size_t used = 0;
    for (size_t index = first; index < chunks.size(); index += step, ++used) {
      const size_t buffer = used % done.size();
      cudaError_t code;
      if (in_flight[buffer]) {
        code = cudaEventSynchronize(done[buffer]);
        if (code != cudaSuccess) return cuda_text("cudaMemcpyAsync", code);
      }
      uint8_t* staging = pinned + buffer * chunk_bytes;
      for (const Fragment& fragment : chunks[index]) {
        std::memcpy(staging, fragment.source, fragment.length);
        code = cudaMemcpyAsync(fragment.device, staging, fragment.length, cudaMemcpyHostToDevice, stream);
        if (code != cudaSuccess) return cuda_text("cudaMemcpyAsync", code);
        staging += fragment.length;
      }
      code = cudaEventRecord(done[buffer], stream);
      if (code != cudaSuccess) return cuda_text("cudaEventRecord", code);
      in_flight[buffer] = true;
    }
    return "";
  }
};

// The work handed to the lanes: a generation number wakes them, `pending`
// counts the lanes still busy with it.
struct Stager::Pool {
  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable finished;
  uint64_t generation = 0;
  size_t pending = 0;
  size_t opened = 0;
  bool stopping = false;
  const std::vector<Chunk>* chunks = nullptr;
  std::vector<std::thread> threads;
};

Result<std::unique_ptr<Stager>> Stager::create(int device, const StagingOptions& options) {
  if (options.chunk_bytes == 0 || options.threads < 1 || options.buffers_per_thread < 1) {
    return usage_error("staged upload: chunk_bytes, threads and buffers_per_thread must be positive");
  }
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Stager> stager(new Stager());
  stager->device_ = device;
  stager->options_ = options;
  stager->near_cpus_ = cpus_near_gpu(device);
  stager->lanes_.resize(static_cast<size_t>(options.threads));
  stager->pool_ = std::make_unique<Pool>();
  // Each lane is opened on its own thread, all in parallel (pinning is the
  // slow part), after the thread moved to the CPUs near the GPU: its buffers
  // are first touched there, so they live in that NUMA node's memory.
  for (size_t i = 0; i < stager->lanes_.size(); ++i)
    stager->pool_->threads.emplace_back([raw = stager.get(), i] { raw->serve(i); });
  {
    std::unique_lock lock(stager->pool_->mutex);
    stager->pool_->finished.wait(lock, [&] { return stager->pool_->opened == stager->lanes_.size(); });
  }
  for (const Lane& lane : stager->lanes_)
    if (!lane.failure.empty())
      return invalid("setting up the weight upload to GPU " + std::to_string(device) + ": " + lane.failure);
  stager->setup_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return stager;
}

Stager::~Stager() {
  if (pool_) {
    {
      std::lock_guard lock(pool_->mutex);
      pool_->stopping = true;
    }
    pool_->wake.notify_all();
    for (std::thread& thread : pool_->threads) thread.join();
  }
  for (Lane& lane : lanes_) lane.close();
}

void Stager::serve(size_t lane_index) {
  Lane& lane = lanes_[lane_index];
  if (!near_cpus_.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : near_cpus_) CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  lane.failure = lane.open(device_, options_);
  {
    std::lock_guard lock(pool_->mutex);
    ++pool_->opened;
  }
  pool_->finished.notify_all();
  uint64_t seen = 0;
  for (;;) {
    const std::vector<Chunk>* chunks = nullptr;
    {
      std::unique_lock lock(pool_->mutex);
      pool_->wake.wait(lock, [&] { return pool_->stopping || pool_->generation != seen; });
      if (pool_->stopping) return;
      seen = pool_->generation;
      chunks = pool_->chunks;
    }
    lane.failure = lane.carry(*chunks, lane_index, lanes_.size(), options_.chunk_bytes);
    {
      std::lock_guard lock(pool_->mutex);
      --pool_->pending;
    }
    pool_->finished.notify_all();
  }
}

Status Stager::copy(std::span<const HostToDevice> copies) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Chunk> chunks = plan_chunks(copies, options_.chunk_bytes);
  if (chunks.empty()) return {};
  ++calls_;
  struct Timer {
    std::chrono::steady_clock::time_point start;
    double& total;
    ~Timer() { total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); }
  } timer{start, busy_ms_};
  {
    std::lock_guard lock(pool_->mutex);
    pool_->chunks = &chunks;
    pool_->pending = lanes_.size();
    ++pool_->generation;
  }
  pool_->wake.notify_all();
  {
    std::unique_lock lock(pool_->mutex);
    pool_->finished.wait(lock, [&] { return pool_->pending == 0; });
  }
  for (const Lane& lane : lanes_)
    if (!lane.failure.empty()) return invalid("uploading to GPU " + std::to_string(device_) + ": " + lane.failure);
  return {};
}

StagingOptions default_staging_options() {
  StagingOptions options;
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  options.threads = std::clamp(cpus / 2, 2, 8);
  options.buffers_per_thread = 2;
  options.chunk_bytes = 4ull << 20;
  options.pinning = Pinning::HugePages;
  return options;
}

Status staged_upload(std::span<const HostToDevice> copies, int device, const StagingOptions& options) {
  PTB_TRY(auto stager, Stager::create(device, options));
  return stager->copy(copies);
}

}  // namespace ptb::detail
