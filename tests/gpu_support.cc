#include "gpu_support.h"

#include <cstdlib>

#include "ptbundle/formats/npy.h"
#include "ptbundle/cuda/runner_config.h"

namespace ptb::test {

std::string gpu_missing() {
  if (!kLibTorchRunnerBuilt) return std::string("built without LibTorch (") + PTB_LIBTORCH_STATUS + ")";
  if (process_aoti_runtime() == AotiRuntime::Builtin) return "the built-in runtime serves this test process";
  auto device = cuda_device(0);
  if (!device.ok()) return device.error().message + " (LibTorch " + libtorch_version() + ")";
  return "";
}

std::string builtin_gpu_missing() {
  if (!kBuiltinRuntimeBuilt) return std::string("built without the built-in runtime (") + PTB_BUILTIN_RUNTIME_STATUS + ")";
  if (process_aoti_runtime() == AotiRuntime::LibTorch) {
    return "LibTorch serves this test process (scripts/gpu-check runs these in its build without LibTorch)";
  }
  auto device = cuda_device(0);
  if (!device.ok()) return device.error().message;
  return "";
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

LoadRequest load_request(const RunPart& part, const PartWeights& weights) {
  LoadRequest request;
  request.label = "part " + part.name;
  request.library = part.library;
  request.library_origin = part.source;
  request.weights = &weights;
  return request;
}

std::optional<fs::path> gpu_packages() {
  const char* dir = std::getenv("PTB_GPU_PACKAGES");
  if (!dir || !*dir || !fs::is_directory(dir)) return std::nullopt;
  return fs::path(dir);
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
