// Where a process's GPU time and CUDA host time go, on GPU machines that
// have no Nsight Systems: a CUDA injection library
// (the driver loads it at the first CUDA call of any process that sets
// CUDA_INJECTION64_PATH) that records through CUPTI every kernel, copy and
// memset the GPU ran and every CUDA runtime and driver call the host made,
// and at exit writes one summary per kind: calls, total and mean time,
// largest first.
//
//   CUDA_INJECTION64_PATH=build/bench/libptb_cuda_trace.so
//     [PTB_CUDA_TRACE_OUT=FILE] [PTB_CUDA_TRACE_ROWS=N] ptbundle run ...
//
// The summary goes to FILE (appended) or stderr; N rows per table (25).
// Every call of the process is counted, warm-up and loading included: trace
// a run with many iterations so that the calls dominate.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Tally {
  uint64_t calls = 0;
  uint64_t total_ns = 0;
};

struct Trace {
  std::mutex mutex;
  std::map<std::string, Tally> kernels, copies, runtime, driver;
  uint64_t dropped = 0;
};

Trace& trace() {
  static Trace* kept = new Trace;  // used by CUPTI's threads until exit
  return *kept;
}

std::string demangled(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && readable ? readable : name;
  std::free(readable);
  // The template arguments make names unreadably long; the name says enough.
  if (text.size() > 110) text = text.substr(0, 107) + "...";
  return text;
}

void add(std::map<std::string, Tally>& table, const std::string& name, uint64_t start, uint64_t end) {
  Tally& tally = table[name];
  tally.calls += 1;
  tally.total_ns += end > start ? end - start : 0;
}

std::string callback_name(CUpti_CallbackDomain domain, uint32_t id) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || !name) return "#" + std::to_string(id);
  return name;
}

constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Trace& t = trace();
  std::lock_guard lock(t.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        add(t.kernels, demangled(k->name), k->start, k->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        add(t.copies, "memcpy kind " + std::to_string(m->copyKind) + " (" + std::to_string(m->bytes) + " bytes)",
            m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        add(t.copies, "memset (" + std::to_string(m->bytes) + " bytes)", m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        add(t.runtime, callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid), a->start, a->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        add(t.driver, callback_name(CUPTI_CB_DOMAIN_DRIVER_API, a->cbid), a->start, a->end);
        break;
      }
      default: break;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) t.dropped += dropped;
  std::free(buffer);
}

void print(std::FILE* out, const char* title, const std::map<std::string, Tally>& table, size_t rows) {
  std::vector<std::pair<std::string, Tally>> sorted(table.begin(), table.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.total_ns > b.second.total_ns; });
  uint64_t all = 0;
  for (const auto& [name, tally] : sorted) all += tally.total_ns;
  std::fprintf(out, "== %s: %.1f us in all\n%10s %12s %10s  %s\n", title, all / 1e3, "calls", "total us", "mean us", "name");
  for (size_t i = 0; i < sorted.size() && i < rows; ++i) {
    const Tally& tally = sorted[i].second;
    std::fprintf(out, "%10llu %12.1f %10.2f  %s\n", static_cast<unsigned long long>(tally.calls), tally.total_ns / 1e3,
                 tally.total_ns / 1e3 / static_cast<double>(tally.calls), sorted[i].first.c_str());
  }
}

void report() {
  cuptiActivityFlushAll(1);
  Trace& t = trace();
  std::lock_guard lock(t.mutex);
  const char* path = std::getenv("PTB_CUDA_TRACE_OUT");
  std::FILE* out = path ? std::fopen(path, "a") : nullptr;
  if (!out) out = stderr;
  const char* rows_text = std::getenv("PTB_CUDA_TRACE_ROWS");
  const size_t rows = rows_text ? std::strtoul(rows_text, nullptr, 10) : 25;
  print(out, "GPU kernels", t.kernels, rows);
  print(out, "GPU copies and memsets", t.copies, rows);
  print(out, "CUDA runtime calls (host)", t.runtime, rows);
  print(out, "CUDA driver calls (host)", t.driver, rows);
  if (t.dropped) std::fprintf(out, "(%llu records dropped)\n", static_cast<unsigned long long>(t.dropped));
  if (out != stderr) std::fclose(out);
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    cuptiActivityEnable(kind);
  }
  std::atexit(report);
  return 1;
}
