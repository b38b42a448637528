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

PartWeights split_per_fqn(const PartWeights& blob, const nlohmann::json& constants) {
  PartWeights weights;
  weights.layout = WeightsLayout::PerFqn;
  weights.file = blob.file + " (split per FQN)";
  uint64_t offset = 0;
  for (const nlohmann::json& constant : constants) {
    if (constant.value("from_folded", false)) continue;
    FqnWeightBytes weight;
    weight.meta.fqn = constant["fqn"];
    weight.meta.storage_key = "test:" + weight.meta.fqn;
    weight.meta.storage_nbytes = constant["data_size"];
    weight.meta.dtype = *scalar_type_from_name(constant["dtype"].get<std::string>());
    weight.meta.device_type = 1;
    weight.meta.sizes = constant["sizes"].get<std::vector<int64_t>>();
    weight.meta.strides = constant["strides"].get<std::vector<int64_t>>();
    REQUIRE(offset + weight.meta.storage_nbytes <= blob.blob.size());
    weight.bytes = blob.blob.subspan(offset, weight.meta.storage_nbytes);
    offset += weight.meta.storage_nbytes;
    weights.tensors.push_back(std::move(weight));
  }
  return weights;
}

ComparisonStats against_eager(AotiModel& model, const fs::path& folder, const std::string& stem, Tolerance tolerance) {
  HostTensor input = npy_tensor(folder / (stem + ".in0.npy"));
  HostTensor expected = npy_tensor(folder / (stem + ".out0.npy"));
  auto outputs = model.run({input});
  REQUIRE_MESSAGE(outputs.ok(), outputs.error().message);
  REQUIRE(outputs->size() == 1);
  auto stats = compare_tensors((*outputs)[0].view(), expected.view(), tolerance);
  REQUIRE_MESSAGE(stats.ok(), stats.error().message);
  CHECK_MESSAGE(stats->passed(), test_case_verdict(stem, {{"output 0", tolerance, *stats, ""}}));
  return *stats;
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
