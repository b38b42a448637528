// Weights reaching the GPU through the runner, on real AOTInductor libraries:
// the blob entry point (pageable and staged), per-FQN binding (the layout of
// ExecuTorch's newer CUDA exports, built here by splitting a package's blob
// at its constants), and a library built with link_libtorch=False.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu/per_fqn_split.h"
#include "gpu_support.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/results/tolerance.h"

using namespace ptb;
using ptb::test::against_eager;
using ptb::test::npy_tensor;
using ptb::test::ScopedTmpdir;
using ptb::test::this_gpu;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// mlp_et's constants, as its wrapper .cpp (in the package) declares them.
const char* kMlpEtConstants = R"([
  {"name": "l1_weight", "fqn": "l1.weight", "dtype": "float32", "data_size": 2048, "sizes": [32, 16], "strides": [16, 1]},
  {"name": "l1_bias", "fqn": "l1.bias", "dtype": "float32", "data_size": 128, "sizes": [32], "strides": [1]},
  {"name": "l2_weight", "fqn": "l2.weight", "dtype": "float32", "data_size": 1024, "sizes": [8, 32], "strides": [32, 1]}
])";

// ExecuTorch's per-FQN layout, made from the blob (gpu/per_fqn_split.h); the
// split covers the whole blob.
PartWeights split_per_fqn(const PartWeights& blob, const Json& constants) {
  auto weights = ptb::gpu_packages::split_per_fqn(blob, constants, "mlp_et's constants");
  REQUIRE_MESSAGE(weights.ok(), weights.error().message);
  uint64_t covered = 0;
  for (const FqnWeightBytes& weight : weights->tensors) covered += weight.bytes.size();
  CHECK(covered == blob.blob.size());
  return std::move(weights).value();
}

PartWeights split_per_fqn(const PartWeights& blob, const fs::path& constants_json) {
  auto weights = ptb::gpu_packages::split_per_fqn(blob, constants_json.string());
  REQUIRE_MESSAGE(weights.ok(), weights.error().message);
  return std::move(weights).value();
}

struct Loaded {
  AotiModel model;
  LoadTimes times;
};

Loaded load(const RunPart& part, const PartWeights& weights, bool staged) {
  LoadOptions options;
  options.staged_upload = staged;
  auto model = ptb::test::load_with(part, weights, options);
  REQUIRE_MESSAGE(model.ok(), model.error().message);
  LoadTimes times = model->load_times();
  return {std::move(model).value(), times};
}

bool contains(Bytes bytes, const std::string& text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end()) != bytes.end();
}

}  // namespace

TEST_CASE("run on GPU: per-FQN weights bind to a real AOTInductor library (mlp_et split at its constants)") {
  PTB_REQUIRE_GPU();
  ScopedTmpdir tmp;
  const fs::path folder = ptb::test::fixture("aoti");
  auto part = open_run_part((folder / "mlp_et.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  const Json constants = Json::parse(kMlpEtConstants);
  PartWeights weights = split_per_fqn(part->weights, constants);
  REQUIRE(weights.tensors.size() == 3);

  Loaded loaded = load(*part, weights, true);
  CHECK(loaded.times.weight_bytes == 3200);
  CHECK(loaded.times.upload_method == "pageable cudaMemcpy");  // 3 KiB is not worth pinning buffers
  ComparisonStats stats = against_eager(loaded.model, folder, "mlp_et", Tolerance{1e-7, 1e-5});
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
  std::printf("[gpu] mlp_et per-FQN: 3 weights bound by FQN, max abs diff %.3g vs eager\n", stats.max_abs_error);

  SUBCASE("a weight of another dtype is refused naming it") {
    weights.tensors[1].meta.dtype = 5;  // float16
    auto refused = ptb::test::load_with(*part, weights);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("weight 'l1.bias' is float16; the library expects float32") !=
          std::string::npos);
  }
  SUBCASE("a missing weight is refused naming the constant") {
    weights.tensors.erase(weights.tensors.begin() + 1);
    auto refused = ptb::test::load_with(*part, weights);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("no weight for constant 'l1.bias' of part mlp_et's library") !=
          std::string::npos);
  }
}

TEST_CASE("run on GPU: a library built with link_libtorch=False, as ExecuTorch builds them, runs both layouts") {
  PTB_REQUIRE_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  if (!ptb::test::have_gpu_package("nolibtorch")) return;
  const fs::path folder = *ptb::test::gpu_packages();
  auto part = open_run_part((folder / "nolibtorch.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  // A libtorch-linked library names libtorch_cpu.so among its dependencies; this one does not.
  auto linked = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), this_gpu());
  REQUIRE(linked.ok());
  CHECK(contains(linked->library, "libtorch_cpu.so"));
  CHECK_FALSE(contains(part->library, "libtorch_cpu.so"));

  Loaded blob = load(*part, part->weights, true);
  ComparisonStats blob_stats = against_eager(blob.model, folder, "nolibtorch", Tolerance{1e-7, 1e-5});
  PartWeights per_fqn = split_per_fqn(part->weights, folder / "nolibtorch.constants.json");
  Loaded bound = load(*part, per_fqn, true);
  ComparisonStats fqn_stats = against_eager(bound.model, folder, "nolibtorch", Tolerance{1e-7, 1e-5});
  std::printf("[gpu] nolibtorch (link_libtorch=False): blob max abs diff %.3g, per-FQN (%zu weights) %.3g vs eager\n",
              blob_stats.max_abs_error, per_fqn.tensors.size(), fqn_stats.max_abs_error);
}

TEST_CASE("run on GPU: 512 MiB of weights, staged and pageable, blob and per-FQN, give eager PyTorch's output") {
  PTB_REQUIRE_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  ptb::test::trace_crashes();
  if (!ptb::test::have_gpu_package("big")) return;
  const fs::path folder = *ptb::test::gpu_packages();
  auto part = open_run_part((folder / "big.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  const Tolerance tolerance{1e-4, 1e-4};
  const double pinned = *pinned_upload_gb_per_second(part->weights.blob.size(), 0, 3);

  auto report = [&](const char* what, const Loaded& loaded, const ComparisonStats& stats) {
    const double rate = loaded.times.upload_gb_per_second();
    std::printf("[gpu] big %-20s %7.2f ms = %5.1f GB/s (%3.0f%% of pinned %.1f GB/s), max abs diff %.3g; %s\n", what,
                loaded.times.weights_ms, rate, 100 * rate / pinned, pinned, stats.max_abs_error,
                loaded.times.upload_method.c_str());
  };
  {
    Loaded staged = load(*part, part->weights, true);
    CHECK(staged.times.upload_method.find("staged through pinned buffers") == 0);
    CHECK(staged.times.upload_method.find(", 512 of 512 MiB") != std::string::npos);
    report("blob, staged", staged, against_eager(staged.model, folder, "big", tolerance));
  }
  {
    Loaded pageable = load(*part, part->weights, false);
    CHECK(pageable.times.upload_method == "pageable cudaMemcpy (staging turned off)");
    report("blob, pageable", pageable, against_eager(pageable.model, folder, "big", tolerance));
  }
  PartWeights per_fqn = split_per_fqn(part->weights, folder / "big.constants.json");
  CHECK(per_fqn.tensors.size() == 16);
  {
    // Again, now that the process has loaded a model: what a first load pays once shows.
    Loaded staged = load(*part, part->weights, true);
    report("blob, staged again", staged, against_eager(staged.model, folder, "big", tolerance));
  }
  {
    Loaded staged = load(*part, per_fqn, true);
    CHECK(staged.times.upload_method.find("staged through pinned buffers") == 0);
    report("per-FQN, staged", staged, against_eager(staged.model, folder, "big", tolerance));
  }
  {
    Loaded pageable = load(*part, per_fqn, false);
    report("per-FQN, pageable", pageable, against_eager(pageable.model, folder, "big", tolerance));
  }
}
