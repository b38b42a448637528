// What the built-in AOTInductor runtime costs on the GPU, and reaches (built
// with the CUDA toolkit; no LibTorch needed), on the packages
// tests/gpu/make_packages.py compiles with ExecuTorch's full options:
//  1. per-call latency of AotiModel::time_calls on et_mlp against the same
//     library driven by the smallest loop through the same C ABI (goal:
//     under 2 us more per call);
//  2. the upload of et_big's 512 MiB of weights, as one blob and split per
//     FQN, as a share of pinned host-to-device bandwidth (goal: 50 % or more).
// scripts/gpu-check --bench runs it.
//
//   bench_builtin --packages DIR [--iterations N]
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../tests/gpu/per_fqn_split.h"
#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/results/timing.h"

using namespace ptb;

namespace {

Result<AotiModel> load_builtin(const RunPart& part, const PartWeights& weights) {
  RunPart with = part;
  with.weights = weights;
  LoadOptions options;
  options.runtime = AotiRuntime::Builtin;
  return load_part(with, options);
}

template <class F>
F symbol(void* where, const char* name, std::string& missing) {
  void* found = ::dlsym(where, name);
  if (!found) missing += std::string(missing.empty() ? "" : ", ") + name;
  return reinterpret_cast<F>(found);
}

// The smallest program that drives the library: its own dlopen, create,
// blob, then Run on one GPU input with CUDA events around each call, as
// time_calls times them. Every CUDA and shim function comes from the
// runtime module, already loaded RTLD_GLOBAL by load_builtin. Set up before
// either runs: a second copy of such a library created after the first has
// run can crash (runner/loaded_library.cc says why).
class MinimalLoop {
 public:
  using Handle = void*;
  using Container = void*;

  static Result<std::unique_ptr<MinimalLoop>> create(const RunPart& part, const HostTensor& input) {
    auto loop = std::unique_ptr<MinimalLoop>(new MinimalLoop);
    PTB_CHECK(loop->set_up(part, input));
    return loop;
  }

  ~MinimalLoop() {
    if (in_) remove_(in_);
    if (container_) destroy_(container_);
    if (library_) ::dlclose(library_);
  }

  Result<std::vector<double>> time(int warmup, int iterations) {
    bool failed = false;
    auto call = [&] {
      Handle given = nullptr, out = nullptr;
      new_handle_(in_, &given);
      failed |= run_(container_, &given, 1, &out, 1, stream_, nullptr) != 0;
      if (out) remove_(out);
    };
    for (int i = 0; i < warmup; ++i) call();
    std::vector<void*> events(2 * static_cast<size_t>(iterations));
    for (auto& event : events) event_create_(&event);
    for (int i = 0; i < iterations; ++i) {
      event_record_(events[2 * i], stream_);
      call();
      event_record_(events[2 * i + 1], stream_);
    }
    stream_sync_(stream_);
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      float ms = 0;
      elapsed_(&ms, events[2 * i], events[2 * i + 1]);
      times.push_back(ms);
    }
    for (void* event : events) event_destroy_(event);
    if (failed) return invalid("a call of the minimal loop failed");
    return times;
  }

 private:
  MinimalLoop() = default;

  Status set_up(const RunPart& part, const HostTensor& input) {
    std::string missing;
    empty_strided_ = symbol<decltype(empty_strided_)>(RTLD_DEFAULT, "aoti_torch_empty_strided", missing);
    new_handle_ = symbol<decltype(new_handle_)>(RTLD_DEFAULT, "aoti_torch_new_tensor_handle", missing);
    remove_ = symbol<decltype(remove_)>(RTLD_DEFAULT, "aoti_torch_delete_tensor_object", missing);
    auto data_ptr = symbol<int32_t (*)(Handle, void**)>(RTLD_DEFAULT, "aoti_torch_get_data_ptr", missing);
    auto memcpy_h2d = symbol<int (*)(void*, const void*, size_t, int)>(RTLD_DEFAULT, "cudaMemcpy", missing);
    auto stream_create = symbol<int (*)(void**, unsigned)>(RTLD_DEFAULT, "cudaStreamCreateWithFlags", missing);
    event_create_ = symbol<decltype(event_create_)>(RTLD_DEFAULT, "cudaEventCreate", missing);
    event_destroy_ = symbol<decltype(event_destroy_)>(RTLD_DEFAULT, "cudaEventDestroy", missing);
    event_record_ = symbol<decltype(event_record_)>(RTLD_DEFAULT, "cudaEventRecord", missing);
    elapsed_ = symbol<decltype(elapsed_)>(RTLD_DEFAULT, "cudaEventElapsedTime", missing);
    stream_sync_ = symbol<decltype(stream_sync_)>(RTLD_DEFAULT, "cudaStreamSynchronize", missing);
    if (!missing.empty()) return invalid("the runtime module does not export " + missing);

    char path[] = "/tmp/ptb_minimal_XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return io_error("mkstemp failed");
    const bool written =
        ::write(fd, part.library.data(), part.library.size()) == static_cast<ssize_t>(part.library.size());
    ::close(fd);
    library_ = written ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    ::unlink(path);
    if (!library_) return invalid(std::string("cannot load the library: ") + (written ? ::dlerror() : "write failed"));
    auto create = symbol<int32_t (*)(Container*, size_t, const char*, const char*)>(
        library_, "AOTInductorModelContainerCreateWithDevice", missing);
    auto blob = symbol<int32_t (*)(Container, const uint8_t*)>(library_, "AOTInductorModelUpdateConstantsFromBlob",
                                                                missing);
    run_ = symbol<decltype(run_)>(library_, "AOTInductorModelContainerRunSingleThreaded", missing);
    destroy_ = symbol<decltype(destroy_)>(library_, "AOTInductorModelContainerDelete", missing);
    if (!missing.empty()) return invalid("the library does not export " + missing);
    if (create(&container_, 1, "cuda:0", nullptr) != 0) return invalid("create failed");
    if (blob(container_, part.weights.blob.data()) != 0) return invalid("loading the blob failed");
    std::vector<int64_t> sizes(input.shape.begin(), input.shape.end());
    if (empty_strided_(static_cast<int64_t>(sizes.size()), sizes.data(), nullptr, input.scalar_type, 1, 0, &in_) != 0)
      return invalid("cannot allocate the input");
    void* device = nullptr;
    data_ptr(in_, &device);
    if (memcpy_h2d(device, input.data.data(), input.data.size(), 1) != 0) return invalid("cannot copy the input");
    stream_create(&stream_, 1);
    return {};
  }

  void* library_ = nullptr;
  Container container_ = nullptr;
  Handle in_ = nullptr;
  void* stream_ = nullptr;
  int32_t (*empty_strided_)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, Handle*) = nullptr;
  int32_t (*new_handle_)(Handle, Handle*) = nullptr;
  int32_t (*remove_)(Handle) = nullptr;
  int32_t (*run_)(Container, Handle*, size_t, Handle*, size_t, void*, void*) = nullptr;
  int32_t (*destroy_)(Container) = nullptr;
  int (*event_create_)(void**) = nullptr;
  int (*event_destroy_)(void*) = nullptr;
  int (*event_record_)(void*, void*) = nullptr;
  int (*elapsed_)(float*, void*, void*) = nullptr;
  int (*stream_sync_)(void*) = nullptr;
};

Status per_call(const std::string& folder, int iterations) {
  PTB_TRY(RunPart part, open_run_part(folder + "/et_mlp.pt2", RunPartOptions{}));
  PTB_TRY(HostTensor input, read_input(folder + "/et_mlp.in0.npy", std::nullopt, 0, "forward"));
  PTB_TRY(AotiModel model, load_builtin(part, part.weights));
  PTB_TRY(auto minimal, MinimalLoop::create(part, input));
  double runner = 1e9, least = 1e9;
  for (int round = 0; round < 3; ++round) {  // best of 3, alternating
    PTB_TRY(auto ours, model.time_calls({input}, 200, iterations));
    runner = std::min(runner, summarize_timings(ours).median_ms * 1000);
    PTB_TRY(auto theirs, minimal->time(200, iterations));
    least = std::min(least, summarize_timings(theirs).median_ms * 1000);
  }
  std::printf("per call (et_mlp, median of %d, best of 3): runner %.2f us, minimal C-ABI loop %.2f us: "
              "%+.2f us (%.3fx) [goal: under +2 us] %s\n",
              iterations, runner, least, runner - least, runner / least, runner - least < 2 ? "ok" : "MISSED");
  return {};
}

Status upload(const std::string& folder) {
  PTB_TRY(RunPart part, open_run_part(folder + "/et_big.pt2", RunPartOptions{}));
  PTB_TRY(PartWeights per_fqn, gpu_packages::split_per_fqn(part.weights, folder + "/et_big.constants.json"));
  // The first load starts the runtime module and pins its buffers; the
  // figures come from the loads after it.
  { PTB_TRY(AotiModel warm, load_builtin(part, part.weights)); }
  PTB_TRY(const double pinned, pinned_upload_gb_per_second(part.weights.blob.size(), 0, 3));
  std::printf("pinned host-to-device reference: %.1f GB/s (%llu MiB)\n", pinned,
              static_cast<unsigned long long>(part.weights.blob.size() >> 20));
  for (const PartWeights* weights : {&part.weights, &per_fqn}) {
    PTB_TRY(AotiModel model, load_builtin(part, *weights));
    const LoadTimes& times = model.load_times();
    const double rate = times.upload_gb_per_second();
    std::printf("upload %-8s %7.2f ms = %5.1f GB/s = %3.0f%% of pinned [goal: 50%%] %s; %s\n",
                weights == &per_fqn ? "per-FQN" : "blob", times.weights_ms, rate, 100 * rate / pinned,
                rate / pinned >= 0.5 ? "ok" : "MISSED", times.upload_method.c_str());
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure out before a crash can lose it
  std::string folder;
  int iterations = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--packages")) folder = argv[i + 1];
    else if (!std::strcmp(argv[i], "--iterations")) iterations = std::atoi(argv[i + 1]);
  }
  if (!kBuiltinRuntimeBuilt) {
    std::printf("bench_builtin: skipped: this build has no built-in runtime (%s)\n", PTB_BUILTIN_RUNTIME_STATUS);
    return 0;
  }
  if (folder.empty()) {
    std::fprintf(stderr, "usage: bench_builtin --packages DIR [--iterations N]   (DIR: tests/gpu/make_packages.py's)\n");
    return 2;
  }
  int status = 0;
  // The upload first: it runs nothing, so per_call's two copies of et_mlp
  // are both created before any library has run (MinimalLoop says why).
  for (auto step : {+[](const std::string& dir, int) { return upload(dir); }, per_call}) {
    Status done = step(folder, iterations);
    if (!done.ok()) {
      std::printf("bench_builtin: %s\n", done.error().message.c_str());
      status = 1;
    }
  }
  return status;
}
