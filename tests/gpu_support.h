// What the GPU tests share. They run only where a CUDA GPU is visible and
// the runtime they test was built (the LibTorch runtime, or the built-in
// runtime), and where the other runtime does not already serve the test
// process (runner.h: one per process; the gpu preset builds without LibTorch,
// for the built-in runtime's tests); elsewhere they print
// "SKIPPED <test>: <what is missing>" and return. They print their figures on
// lines starting "[gpu]".
#pragma once

#include <optional>
#include <string>

#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/results/tolerance.h"
#include "support.h"

namespace ptb::test {

// Why GPU tests of the LibTorch runtime cannot run here, or "" when they can.
std::string gpu_missing();
// Why GPU tests of the built-in runtime cannot run here, or "" when they can.
std::string builtin_gpu_missing();
// For tests that run the CLI on link_libtorch=False libraries (the example):
// a GPU and the built-in runtime in the build; what serves this test process
// does not matter, the CLI runs in its own.
std::string cli_builtin_gpu_missing();

// Options that check kernels against the GPU LibTorch sees as device 0.
RunPartOptions this_gpu();

HostTensor npy_tensor(const fs::path& path);

// `part` loaded with other weights (load_part, the one way to load a part).
Result<AotiModel> load_with(const RunPart& part, const PartWeights& weights, const LoadOptions& options = {});

// Runs the package's recorded input (<stem>.in0.npy in `folder`) and
// compares with eager PyTorch's output (<stem>.out0.npy).
ComparisonStats against_eager(AotiModel& model, const fs::path& folder, const std::string& stem, Tolerance tolerance);

// Packages tests/gpu/make_packages.py compiled on this machine's GPU
// (scripts/gpu-check sets PTB_GPU_PACKAGES), or nullopt.
std::optional<fs::path> gpu_packages();
// Whether PTB_GPU_PACKAGES holds `name`.pt2; if not, says SKIPPED, naming
// the make_packages.py name to compile (a run may make only some).
bool have_gpu_package(const std::string& name);

// From here to the end of the test case, a crash (SIGSEGV, SIGBUS, SIGILL,
// SIGFPE) first prints its stack on stderr, a frame a line as
// "[crash] #N <module>+0x<offset> <nearest exported symbol>", which
// `addr2line -f -C -e <module> <offset>` turns into source lines; then doctest
// reports the crash as before. Without a debugger at hand, a crash inside a
// model library otherwise says only "SIGSEGV".
void trace_crashes();

// Points TMPDIR at a fresh folder for the test's lifetime, so that what the
// runner leaves behind can be seen.
class ScopedTmpdir {
 public:
  ScopedTmpdir();
  ~ScopedTmpdir();
  ScopedTmpdir(const ScopedTmpdir&) = delete;
  ScopedTmpdir& operator=(const ScopedTmpdir&) = delete;
  bool empty() const { return fs::is_empty(dir_.path()); }
  // "a, b/c": what is in it, for the message of a failed empty() check.
  std::string listing() const;

 private:
  TempDir dir_;
  std::optional<std::string> old_;
};

}  // namespace ptb::test

// Skips the test, naming what is missing, when `why_missing` (a string
// expression, evaluated once) is not empty; the fixtures are required first.
#define PTB_REQUIRE_GPU_SETUP(why_missing)         \
  do {                                             \
    PTB_REQUIRE_FIXTURES();                        \
    std::string missing_ = (why_missing);          \
    if (!missing_.empty()) {                       \
      ::ptb::test::skip(missing_);                 \
      return;                                      \
    }                                              \
  } while (0)

#define PTB_REQUIRE_GPU() PTB_REQUIRE_GPU_SETUP(::ptb::test::gpu_missing())
#define PTB_REQUIRE_BUILTIN_GPU() PTB_REQUIRE_GPU_SETUP(::ptb::test::builtin_gpu_missing())
#define PTB_REQUIRE_CLI_BUILTIN_GPU() PTB_REQUIRE_GPU_SETUP(::ptb::test::cli_builtin_gpu_missing())

// Only the packages: each test says first which runtime it needs.
#define PTB_REQUIRE_GPU_PACKAGES()                                                                   \
  do {                                                                                               \
    if (!::ptb::test::gpu_packages()) {                                                              \
      ::ptb::test::skip("PTB_GPU_PACKAGES is not set (scripts/gpu-check compiles them with "        \
                        "tests/gpu/make_packages.py)");                                              \
      return;                                                                                        \
    }                                                                                                \
  } while (0)
