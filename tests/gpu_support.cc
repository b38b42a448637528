#include "gpu_support.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "ptbundle/formats/npy.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/runner_config.h"
#include "ptbundle/cuda/runtime_choice.h"

namespace ptb::test {

std::string gpu_missing() {
  if (!kLibTorchRunnerBuilt) return std::string("built without LibTorch (") + PTB_LIBTORCH_STATUS + ")";
  if (process_aoti_runtime() == AotiRuntime::Builtin) return "the built-in runtime serves this test process";
  auto device = cuda_device(0);
  if (!device.ok()) return device.error().message + " (LibTorch " + libtorch_version() + ")";
  return "";
}

std::string cli_builtin_gpu_missing() {
  if (!kBuiltinRuntimeBuilt) return std::string("built without the built-in runtime (") + PTB_BUILTIN_RUNTIME_STATUS + ")";
  auto device = cuda_device(0);
  if (!device.ok()) return device.error().message;
  return "";
}

std::string builtin_gpu_missing() {
  if (kBuiltinRuntimeBuilt && process_aoti_runtime() == AotiRuntime::LibTorch) {
    return "LibTorch serves this test process (the gpu preset's build, without LibTorch, runs these)";
  }
  return cli_builtin_gpu_missing();
}

RunPartOptions this_gpu() {
  RunPartOptions options;
  options.gpu = cuda_device(0)->capability;
  return options;
}

HostTensor npy_tensor(const fs::path& path) {
  auto file = NpyFile::open(path.string());
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  HostTensor tensor;
  tensor.scalar_type = file->header().scalar_type;
  tensor.shape = file->header().shape;
  tensor.data.assign(file->data().begin(), file->data().end());
  return tensor;
}

ComparisonStats against_eager(AotiModel& model, const fs::path& folder, const std::string& stem, Tolerance tolerance) {
  HostTensor input = npy_tensor(folder / (stem + ".in0.npy"));
  HostTensor expected = npy_tensor(folder / (stem + ".out0.npy"));
  auto outputs = model.run({input});
  REQUIRE_MESSAGE(outputs.ok(), outputs.error().message);
  REQUIRE(outputs->size() == 1);
  auto stats = compare_tensors(tensor_bytes((*outputs)[0]), tensor_bytes(expected), tolerance);
  REQUIRE_MESSAGE(stats.ok(), stats.error().message);
  CHECK_MESSAGE(stats->passed(), test_case_verdict(stem, {{"output 0", tolerance, *stats, ""}}));
  return *stats;
}

Result<AotiModel> load_with(const RunPart& part, const PartWeights& weights, const LoadOptions& options) {
  RunPart with = part;
  with.weights = weights;
  return load_part(with, options);
}

std::optional<fs::path> gpu_packages() {
  const char* dir = std::getenv("PTB_GPU_PACKAGES");
  if (!dir || !*dir || !fs::is_directory(dir)) return std::nullopt;
  return fs::path(dir);
}

bool have_gpu_package(const std::string& name) {
  auto folder = gpu_packages();
  if (folder && fs::exists(*folder / (name + ".pt2"))) return true;
  skip(name + ".pt2 was not made (tests/gpu/make_packages.py " + name + ")");
  return false;
}

namespace {

constexpr int kTracedSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
struct sigaction previous_action[NSIG];

void print_frame(int index, const void* address) {
  Dl_info where{};
  if (::dladdr(address, &where) && where.dli_fname) {
    std::fprintf(stderr, "[crash] #%d %s+0x%zx %s\n", index, where.dli_fname,
                 static_cast<size_t>(reinterpret_cast<uintptr_t>(address) - reinterpret_cast<uintptr_t>(where.dli_fbase)),
                 where.dli_sname ? where.dli_sname : "?");
  } else {
    std::fprintf(stderr, "[crash] #%d %p (no module)\n", index, address);
  }
}

// Not strictly async-signal-safe (dladdr, stdio): the process is about to
// end anyway, and a partial trace beats none.
void on_crash(int signal, siginfo_t* info, void* context) {
  std::fprintf(stderr, "[crash] signal %d, fault address %p\n", signal, info ? info->si_addr : nullptr);
#if defined(__x86_64__)
  const auto* machine = static_cast<const ucontext_t*>(context);
  print_frame(-1, reinterpret_cast<const void*>(machine->uc_mcontext.gregs[REG_RIP]));
#else
  (void)context;
#endif
  void* frames[64];
  const int count = ::backtrace(frames, 64);
  for (int i = 0; i < count; ++i) print_frame(i, frames[i]);
  std::fflush(stderr);
  // Returning re-runs the faulting instruction under the previous handler
  // (doctest's), which reports the crash.
  ::sigaction(signal, &previous_action[signal], nullptr);
}

}  // namespace

void trace_crashes() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc's unwinder now, not in the handler
  struct sigaction action{};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int signal : kTracedSignals) ::sigaction(signal, &action, &previous_action[signal]);
}

ScopedTmpdir::ScopedTmpdir() {
  if (const char* old = std::getenv("TMPDIR")) old_ = old;
  setenv("TMPDIR", dir_.path().c_str(), 1);
}

std::string ScopedTmpdir::listing() const {
  std::string names;
  for (const auto& entry : fs::recursive_directory_iterator(dir_.path()))
    names += (names.empty() ? "" : ", ") + fs::relative(entry.path(), dir_.path()).string();
  return "left in TMPDIR: " + names;
}

ScopedTmpdir::~ScopedTmpdir() {
  if (old_) setenv("TMPDIR", old_->c_str(), 1);
  else unsetenv("TMPDIR");
}

}  // namespace ptb::test
