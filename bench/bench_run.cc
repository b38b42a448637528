// What `ptbundle run` costs on the GPU (built only with LibTorch):
//  1. per-call latency of the runner (AotiModel::time_calls) against the same
//     library driven by a minimal C++ loop through the same C ABI, and
//     against eager PyTorch when its figure is given (--eager-us, measured by
//     a python3 snippet in the same session on the same GPU);
// (Weight upload rates are bench_upload's.)
// Goal: the runner adds under 2% or 5 us per call, whichever is larger.
//
//   bench_run [--package PATH.pt2] [--input IN.npy] [--iterations N]
//             [--eager-us X]
#include <cstdio>
#include <string>

#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"

#if !defined(PTB_HAVE_LIBTORCH)

int main() {
  std::printf("bench_run: skipped: %s\n", ptb::runner_unavailable_reason().c_str());
  return 0;
}

#else

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/results/timing.h"
#include "bench_util.h"

namespace fs = std::filesystem;
using namespace ptb;
using namespace ptb::bench;

namespace {

struct Options {
  std::string package;
  std::string input;
  int iterations = 2000;
  int warmup = 200;
  double eager_us = 0;
};

HostTensor read_npy(const std::string& path) {
  NpyFile file = need(NpyFile::open(path));
  HostTensor tensor;
  tensor.scalar_type = file.header().scalar_type;
  tensor.shape = file.header().shape;
  tensor.data.assign(file.data().begin(), file.data().end());
  return tensor;
}

// The smallest program that runs the library: dlopen, create, load the blob,
// then call Run on the same input with CUDA events around each call, exactly
// as the runner times calls.
std::vector<double> minimal_loop(const RunPart& part, const at::Tensor& input, int warmup, int iterations) {
  char path[] = "/tmp/bench_run_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, part.library.data(), part.library.size()) != static_cast<ssize_t>(part.library.size()))
    fail("cannot write the library to /tmp");
  close(fd);
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  if (!library) fail(std::string("dlopen: ") + dlerror());
  using Container = void*;
  auto create = reinterpret_cast<int32_t (*)(Container*, size_t, const char*, const char*)>(
      dlsym(library, "AOTInductorModelContainerCreateWithDevice"));
  auto blob = reinterpret_cast<int32_t (*)(Container, const uint8_t*)>(
      dlsym(library, "AOTInductorModelUpdateConstantsFromBlob"));
  auto run = reinterpret_cast<int32_t (*)(Container, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, void*,
                                          void*)>(dlsym(library, "AOTInductorModelContainerRunSingleThreaded"));
  auto destroy = reinterpret_cast<int32_t (*)(Container)>(dlsym(library, "AOTInductorModelContainerDelete"));
  if (!create || !blob || !run || !destroy) fail("the library lacks an entry point the minimal loop uses");
  Container container = nullptr;
  if (create(&container, 1, "cuda:0", nullptr) != 0 || blob(container, part.weights.blob.data()) != 0)
    fail("minimal loop: create or weights failed");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(0).stream();
  auto call = [&] {
    AtenTensorHandle in = reinterpret_cast<AtenTensorHandle>(new at::Tensor(input));
    AtenTensorHandle out = nullptr;
    if (run(container, &in, 1, &out, 1, stream, nullptr) != 0) fail("minimal loop: run failed");
    aoti_torch_delete_tensor_object(out);
  };
  for (int i = 0; i < warmup; ++i) call();
  std::vector<cudaEvent_t> events(2 * static_cast<size_t>(iterations));
  for (auto& event : events) cudaEventCreate(&event);
  for (int i = 0; i < iterations; ++i) {
    cudaEventRecord(events[2 * i], stream);
    call();
    cudaEventRecord(events[2 * i + 1], stream);
  }
  cudaStreamSynchronize(stream);
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    float ms = 0;
    cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
    times.push_back(ms);
  }
  for (auto& event : events) cudaEventDestroy(event);
  destroy(container);
  dlclose(library);
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure shows even if a later step dies
  Options options;
  options.package = (find_fixtures() / "aoti/mlp_et.pt2").string();
  options.input = (find_fixtures() / "aoti/mlp_et.in0.npy").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--package") options.package = value;
    else if (flag == "--input") options.input = value;
    else if (flag == "--iterations") options.iterations = std::stoi(value);
    else if (flag == "--eager-us") options.eager_us = std::stod(value);
    else fail("unknown option " + flag);
  }

  CudaDeviceInfo gpu = need(cuda_device(0));
  RunPartOptions part_options;
  part_options.gpu = gpu.capability;
  RunPart part = need(open_run_part(options.package, part_options));
  HostTensor input = read_npy(options.input);
  AotiModel model = need(load_part(part, {}));

  std::printf("bench_run on %s (%s), LibTorch %s, %s, %d calls after %d warm-up\n", gpu.name.c_str(),
              gpu.capability.name().c_str(), libtorch_version().c_str(), part.source.c_str(), options.iterations,
              options.warmup);
  // Alternate the two so that clock changes hit both alike; keep the best round.
  TimingStats runner_best, minimal_best;
  at::Tensor device_input = at::from_blob(input.data.data(), {static_cast<int64_t>(input.shape[0]),
                                                              static_cast<int64_t>(input.shape[1])},
                                          at::TensorOptions().dtype(at::kFloat))
                                .to(at::Device(at::kCUDA, 0));
  for (int round = 0; round < 3; ++round) {
    TimingStats runner = summarize_timings(need(model.time_calls({input}, options.warmup, options.iterations)));
    TimingStats minimal = summarize_timings(minimal_loop(part, device_input, options.warmup, options.iterations));
    if (round == 0 || runner.median_ms < runner_best.median_ms) runner_best = runner;
    if (round == 0 || minimal.median_ms < minimal_best.median_ms) minimal_best = minimal;
  }
  const double runner_us = runner_best.median_ms * 1000, minimal_us = minimal_best.median_ms * 1000;
  std::printf("per call (median of the best of 3 rounds):\n");
  std::printf("  ptbundle runner       %8.2f us (p99 %.2f us, CV %.1f%%)\n", runner_us, runner_best.p99_ms * 1000,
              runner_best.coefficient_of_variation * 100);
  std::printf("  minimal C ABI loop    %8.2f us (p99 %.2f us, CV %.1f%%)\n", minimal_us, minimal_best.p99_ms * 1000,
              minimal_best.coefficient_of_variation * 100);
  const double overhead = runner_us - minimal_us;
  const double allowed = std::max(0.02 * minimal_us, 5.0);
  std::printf("  runner / minimal      %8.3f (adds %.2f us; goal: under %.2f us) %s\n", runner_us / minimal_us,
              overhead, allowed, overhead <= allowed ? "MET" : "NOT MET");
  if (options.eager_us > 0) {
    std::printf("  eager PyTorch         %8.2f us; runner / eager %.3f\n", options.eager_us, runner_us / options.eager_us);
  }
  return 0;
}

#endif
