// The built-in AOTInductor runtime on the GPU: libraries compiled with
// ExecuTorch's full options (link_libtorch=False, Triton-only GEMM and
// convolution; tests/gpu/make_packages.py) run without LibTorch and give
// eager PyTorch's outputs; a library needing a shim the runtime lacks is
// refused before anything is loaded; the LibTorch runtime gives the same
// outputs (through the CLI, one process per runtime); 512 MiB of weights in
// both layouts; process start to first output. The rates and the per-call
// overhead are printed ("[gpu]" lines); bench/bench_builtin checks them
// against their goals.
// In a build with LibTorch, the in-process tests skip (runner.h: one runtime
// per process); the gpu preset's build, without LibTorch, runs them.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu/per_fqn_split.h"
#include "gpu_support.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/results/timing.h"
#include "ptbundle/results/tolerance.h"

using namespace ptb;
using ptb::test::against_eager;
using ptb::test::npy_tensor;
using ptb::test::ScopedTmpdir;
using ptb::test::this_gpu;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

#define CHECK_CONTAINS(text, part) CHECK_MESSAGE((text).find(part) != std::string::npos, (text))

// ExecuTorch's full options, and link_libtorch=False alone (ATen GEMMs).
const char* kPackages[] = {"et_mlp", "et_conv", "et_embed", "nolibtorch"};

AotiModel load_builtin(const RunPart& part, const PartWeights& weights, bool staged = true) {
  LoadOptions options;
  options.staged_upload = staged;
  options.runtime = AotiRuntime::Builtin;
  auto model = ptb::test::load_with(part, weights, options);
  REQUIRE_MESSAGE(model.ok(), model.error().message);
  CHECK(model->runtime().kind == AotiRuntime::Builtin);
  return std::move(model).value();
}

PartWeights split_per_fqn(const PartWeights& blob, const fs::path& constants_json) {
  auto weights = ptb::gpu_packages::split_per_fqn(blob, constants_json.string());
  REQUIRE_MESSAGE(weights.ok(), weights.error().message);
  return std::move(weights).value();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("run on GPU, built-in runtime: link_libtorch=False libraries match eager PyTorch, both weight layouts") {
  PTB_REQUIRE_BUILTIN_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  ScopedTmpdir tmp;
  const fs::path folder = *ptb::test::gpu_packages();
  int ran = 0;
  for (const char* name : kPackages) {
    CAPTURE(name);
    if (!ptb::test::have_gpu_package(name)) continue;
    ++ran;
    auto part = open_run_part((folder / (std::string(name) + ".pt2")).string(), this_gpu());
    REQUIRE_MESSAGE(part.ok(), part.error().message);
    // Steps on stderr, so that a crash shows where it happened.
    std::fprintf(stderr, "[step] %s: load blob\n", name);
    AotiModel model = load_builtin(*part, part->weights);
    std::fprintf(stderr, "[step] %s: run blob\n", name);
    const ComparisonStats blob = against_eager(model, folder, name, Tolerance{1e-5, 1e-5});
    PartWeights per_fqn = split_per_fqn(part->weights, folder / (std::string(name) + ".constants.json"));
    std::fprintf(stderr, "[step] %s: load per-FQN\n", name);
    AotiModel bound = load_builtin(*part, per_fqn);
    std::fprintf(stderr, "[step] %s: run per-FQN\n", name);
    const ComparisonStats fqn = against_eager(bound, folder, name, Tolerance{1e-5, 1e-5});
    std::fprintf(stderr, "[step] %s: time\n", name);
    auto times = model.time_calls({npy_tensor(folder / (std::string(name) + ".in0.npy"))}, 20, 200);
    REQUIRE_MESSAGE(times.ok(), times.error().message);
    const TimingStats stats = summarize_timings(*times);
    std::printf("[gpu] built-in %-8s (%s): blob max abs diff %.3g, per-FQN (%zu weights) %.3g vs eager; "
                "median %.1f us\n",
                name, model.runtime().name.c_str(), blob.max_abs_error, per_fqn.tensors.size(), fqn.max_abs_error,
                stats.median_ms * 1000);
  }
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
  // Which runtime the process took is known only once a package loaded.
  if (ran > 0) CHECK(process_aoti_runtime() == AotiRuntime::Builtin);
}

TEST_CASE("run on GPU, built-in runtime: a library needing a shim it lacks is refused before loading") {
  PTB_REQUIRE_CLI_BUILTIN_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  // torch.fft.rfft: a function the built-in runtime does not have.
  if (!ptb::test::have_gpu_package("et_fft")) return;
  const fs::path lacking = *ptb::test::gpu_packages() / "et_fft.pt2";
  ScopedTmpdir tmp;
  auto part = open_run_part(lacking.string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  LoadOptions options;
  options.runtime = AotiRuntime::Builtin;
  auto refused = load_part(*part, options);
  REQUIRE_FALSE(refused.ok());
  CHECK_CONTAINS(refused.error().message, "the built-in AOTInductor runtime lacks");
  CHECK_CONTAINS(refused.error().message, "aoti_torch_cuda__fft_r2c");
  CHECK_MESSAGE(tmp.empty(), tmp.listing());  // the library was never written out, let alone loaded
  std::printf("[gpu] et_fft refused before loading: %s\n", refused.error().message.c_str());
}

TEST_CASE("run on GPU, built-in runtime: 512 MiB of weights upload staged, blob and per-FQN, and match eager") {
  PTB_REQUIRE_BUILTIN_GPU();
  ptb::test::trace_crashes();
  if (!ptb::test::gpu_packages()) {
    ptb::test::skip("PTB_GPU_PACKAGES is not set");
    return;
  }
  const fs::path folder = *ptb::test::gpu_packages();
  if (!ptb::test::have_gpu_package("et_big")) return;
  auto part = open_run_part((folder / "et_big.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  const Tolerance tolerance{1e-3, 1e-3};
  auto report = [&](const char* what, AotiModel& model, double pinned) {
    const LoadTimes& times = model.load_times();
    const ComparisonStats stats = against_eager(model, folder, "et_big", tolerance);
    const double rate = times.upload_gb_per_second();
    std::printf("[gpu] built-in et_big %-18s %7.2f ms = %5.1f GB/s (%3.0f%% of pinned %.1f GB/s), max abs diff %.3g; "
                "%s\n",
                what, times.weights_ms, rate, 100 * rate / pinned, pinned, stats.max_abs_error,
                times.upload_method.c_str());
    return rate / pinned;
  };
  {
    std::fprintf(stderr, "[step] et_big: load blob\n");
    AotiModel first = load_builtin(*part, part->weights);  // loads the runtime: the pinned figure comes from it
    const double pinned = *pinned_upload_gb_per_second(part->weights.blob.size(), 0, 3);
    report("blob, staged (1st)", first, pinned);
    AotiModel again = load_builtin(*part, part->weights);
    CHECK(again.load_times().upload_method.find("staged through pinned buffers") == 0);
    report("blob, staged", again, pinned);
    AotiModel pageable = load_builtin(*part, part->weights, false);
    report("blob, pageable", pageable, pinned);
    PartWeights per_fqn = split_per_fqn(part->weights, folder / "et_big.constants.json");
    AotiModel bound = load_builtin(*part, per_fqn);
    report("per-FQN, staged", bound, pinned);
  }
}

TEST_CASE("run on GPU, built-in runtime: the CLI's outputs equal the LibTorch runtime's; start to first output") {
  PTB_REQUIRE_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  const fs::path folder = *ptb::test::gpu_packages();
  ptb::test::TempDir out;
  auto timed_cli = [](const std::string& args, double& seconds) {
    auto start = std::chrono::steady_clock::now();
    auto result = ptb::test::run_cli(args);
    seconds = seconds_since(start);
    return result;
  };
  double version_s = 0;
  auto version = timed_cli("--version", version_s);
  CHECK(version.exit_code == 0);
  for (const char* name : kPackages) {
    CAPTURE(name);
    if (!ptb::test::have_gpu_package(name)) continue;
    const std::string common = "run " + ptb::test::quote(folder / (std::string(name) + ".pt2")) + " --input 0=" +
                               ptb::test::quote(folder / (std::string(name) + ".in0.npy")) + " --expect 0=" +
                               ptb::test::quote(folder / (std::string(name) + ".out0.npy")) +
                               " --iterations 0 --json --output-dir ";
    double builtin_s = 0, libtorch_s = 0;
    auto builtin = timed_cli(common + ptb::test::quote(out / "builtin") + " --runtime builtin", builtin_s);
    REQUIRE_MESSAGE(builtin.exit_code == 0, builtin.err);
    CHECK(Json::parse(builtin.out)["runtime"]["kind"] == "builtin");
    if (!kLibTorchRunnerBuilt) {
      std::printf("[gpu] built-in CLI %-8s start to first output %.3f s (no LibTorch in this build); --version %.3f s\n",
                  name, builtin_s, version_s);
      continue;
    }
    auto libtorch = timed_cli(common + ptb::test::quote(out / "libtorch") + " --runtime libtorch", libtorch_s);
    REQUIRE_MESSAGE(libtorch.exit_code == 0, libtorch.err);
    CHECK(Json::parse(libtorch.out)["runtime"]["kind"] == "libtorch");
    const std::string file = std::string(name) + ".out0.npy";
    HostTensor a = npy_tensor(out / "builtin" / file);
    HostTensor b = npy_tensor(out / "libtorch" / file);
    CHECK(a.shape == b.shape);
    CHECK(a.data == b.data);
    std::printf("[gpu] CLI %-8s outputs %s; start to first output: built-in %.3f s, LibTorch %.3f s; "
                "--version %.3f s\n",
                name, a.data == b.data ? "equal" : "DIFFER", builtin_s, libtorch_s, version_s);
  }
}
