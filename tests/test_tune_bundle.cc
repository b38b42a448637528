// A bundle's tune file (bundle/tune_file.h, cuda/tune.h): listed in
// bundle.json so that verify covers it, shown by inspect, refused when
// changed, written as one transaction; `ptbundle tune` without a GPU exits
// 1 naming what is missing. On a GPU (the gpu tier): tune a bundle, then
// start `ptbundle run` ten times and check every start makes the same
// choices, searches nothing, and its first call is within 2x of the calls
// after it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "gpu_support.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/tune_file.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/tune.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;
using ptb::test::quote;
namespace fs = std::filesystem;

namespace {

// The MLP package with its example as the test case, exported by the CLI.
fs::path exported(const ptb::test::TempDir& dir) {
  const fs::path bundle = dir / "bundle";
  const auto made = ptb::test::run_cli("export -o " + quote(bundle) + " --part mlp=" +
                                       quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --example mlp=" +
                                       quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + ":" +
                                       quote(ptb::test::fixture("aoti/mlp_et.out0.npy")));
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return bundle;
}

TuneFile choices_for(const std::string& gpu_name, const std::string& sm) {
  TuneFile file;
  TuneGpu gpu;
  gpu.name = gpu_name;
  gpu.sm = sm;
  gpu.runtime = "built-in (CUDA runtime 13.0)";
  gpu.tuned = "2026-05-01T12:34:56Z";
  gpu.choices.push_back({"gemm", "m=32 n=4 k=16", "algo=" + std::string(128, '0'), 130100});
  file.gpus.push_back(gpu);
  return file;
}

nlohmann::json verify_json(const fs::path& bundle) {
  const auto verified = ptb::test::run_cli("verify --gpu none --json " + quote(bundle));
  return nlohmann::json::parse(verified.out);
}

// The tune_file check's outcomes: status of each.
std::vector<std::string> tune_checks(const nlohmann::json& report) {
  std::vector<std::string> out;
  for (const auto& check : report["checks"])
    if (check["check"] == "tune_file") out.push_back(check["status"].get<std::string>() + " " + check["message"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("tune file in a bundle: listed, verified, inspected, refused when changed") {
  PTB_REQUIRE_FIXTURES();
  ptb::test::TempDir dir;
  const fs::path bundle = exported(dir);
  CHECK(tune_checks(verify_json(bundle)).empty());

  auto written = write_bundle_tune_file(bundle.string(), choices_for("NVIDIA H100 80GB HBM3", "sm_90"), "test");
  REQUIRE_MESSAGE(written.ok(), written.error().message);
  CHECK(*written == "tune.json");
  auto opened = Bundle::open(bundle.string());
  REQUIRE(opened.ok());
  REQUIRE(opened->manifest().tune);
  CHECK(opened->manifest().tune->size == fs::file_size(bundle / "tune.json"));
  opened = Bundle::open((dir / "none").string());  // the read lock goes with it

  const nlohmann::json report = verify_json(bundle);
  CHECK_MESSAGE(report["ok"] == true, report.dump());
  const auto checks = tune_checks(report);
  REQUIRE(checks.size() == 1);
  CHECK(contains(checks[0], "pass 1 recorded choice(s) for 1 GPU(s): NVIDIA H100 80GB HBM3 (sm_90)"));

  const auto text = ptb::test::run_cli("inspect " + quote(bundle));
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, "Tune file: tune.json"));
  CHECK(contains(text.out, "NVIDIA H100 80GB HBM3 (sm_90): 1 GEMM and 0 convolution choice(s), cuBLASLt 130100"));
  const auto json = ptb::test::run_cli("inspect --json " + quote(bundle));
  REQUIRE(json.exit_code == 0);
  const auto inspected = nlohmann::json::parse(json.out);
  const auto& entry = inspected["files"][0];
  CHECK(entry["tune"]["path"] == "tune.json");
  CHECK(entry["tune"]["gpus"][0]["gemm"] == 1);
  CHECK(entry["manifest"]["tune"]["path"] == "tune.json");
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("inspect", json.out) == "");

  // The runtime gets this GPU's choices only.
  CudaDeviceInfo h100{0, "NVIDIA H100 80GB HBM3", {9, 0}, 0};
  CudaDeviceInfo other{0, "NVIDIA A100-SXM4-80GB", {8, 0}, 0};
  std::string warning;
  auto tuned = tuned_choices_for(bundle.string(), h100, warning);
  REQUIRE(tuned);
  CHECK(warning.empty());
  CHECK(tuned->choices.size() == 1);
  CHECK(contains(tuned->source, "tune.json"));
  CHECK_FALSE(tuned_choices_for(bundle.string(), other, warning));

  // A second tune: the other generation's name, the old file gone, both GPUs kept.
  TuneFile both = choices_for("NVIDIA H100 80GB HBM3", "sm_90");
  add_tuned(both, choices_for("NVIDIA A100-SXM4-80GB", "sm_80").gpus[0]);
  written = write_bundle_tune_file(bundle.string(), both, "test");
  REQUIRE(written.ok());
  CHECK(*written == "tune@1.json");
  CHECK_FALSE(fs::exists(bundle / "tune.json"));
  CHECK(tuned_choices_for(bundle.string(), other, warning));
  CHECK(verify_json(bundle)["ok"] == true);

  // Changed after tune wrote it: verify fails it, run ignores it with a warning naming the file.
  ptb::test::flip_byte(bundle / "tune@1.json", 40);
  const auto changed = tune_checks(verify_json(bundle));
  REQUIRE(changed.size() == 1);
  CHECK(contains(changed[0], "fail"));
  CHECK(contains(changed[0], "the file changed after ptbundle tune wrote it"));
  warning.clear();
  CHECK_FALSE(tuned_choices_for(bundle.string(), h100, warning));
  CHECK(contains(warning, "tune@1.json"));
  CHECK(contains(warning, "ignored"));

  // Changed and bundle.json's digest made to match: the content is read and refused.
  {
    std::ofstream(bundle / "tune@1.json", std::ios::trunc) << R"({"format": "ptbundle-tune", "format_version": 1, "gpus": [{"name": 1}]})";
  }
  ptb::test::rewrite_manifest_digests(bundle);
  auto rewritten = Bundle::open(bundle.string());
  REQUIRE(rewritten.ok());
  const bool digest_kept = rewritten->manifest().tune && rewritten->manifest().tune->size == fs::file_size(bundle / "tune@1.json");
  rewritten = Bundle::open((dir / "none").string());
  if (digest_kept) {
    const auto hostile = tune_checks(verify_json(bundle));
    REQUIRE(hostile.size() == 1);
    CHECK(contains(hostile[0], "gpus[0]"));
  }
  warning.clear();
  CHECK_FALSE(tuned_choices_for(bundle.string(), h100, warning));
  CHECK(contains(warning, "tune@1.json"));
}

TEST_CASE("tune file in a bundle: an unlisted tune file is a warning; tune refuses a signed bundle") {
  PTB_REQUIRE_FIXTURES();
  ptb::test::TempDir dir;
  const fs::path bundle = exported(dir);
  { std::ofstream(bundle / "tune.json") << "{}"; }
  const auto checks = tune_checks(verify_json(bundle));
  REQUIRE(checks.size() == 1);
  CHECK(contains(checks[0], "warn"));
  CHECK(contains(checks[0], "does not list it"));
  fs::remove(bundle / "tune.json");

  const auto key = dir / "key.pem";
  if (std::system(("openssl ecparam -name prime256v1 -genkey -noout -out " + quote(key) + " 2>/dev/null").c_str()) != 0) {
    ptb::test::skip("openssl cannot make a key");
    return;
  }
  const auto signed_ = ptb::test::run_cli("sign " + quote(bundle) + " --key " + quote(key));
  REQUIRE_MESSAGE(signed_.exit_code == 0, signed_.err);
  auto refused = write_bundle_tune_file(bundle.string(), choices_for("NVIDIA H100 80GB HBM3", "sm_90"), "test");
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "bundle.sig"));
  CHECK(contains(refused.error().message, "tune before ptbundle sign"));
  const auto tuned = ptb::test::run_cli("tune " + quote(bundle));
  CHECK(tuned.exit_code == 1);
  CHECK(contains(tuned.err, "tune before ptbundle sign"));
  CHECK_FALSE(fs::exists(bundle / "tune.json"));
}

TEST_CASE("tune: without a GPU, exits 1 naming what is missing, and the bundle is unchanged") {
  PTB_REQUIRE_FIXTURES();
  if (cuda_device(0).ok()) {
    ptb::test::skip("this machine has a GPU (the gpu tier tunes on it)");
    return;
  }
  ptb::test::TempDir dir;
  const fs::path bundle = exported(dir);
  const std::string before = ptb::test::read_text(bundle / "bundle.json");
  const auto text = ptb::test::run_cli("tune " + quote(bundle));
  CHECK(text.exit_code == 1);
  CHECK(contains(text.err, "no CUDA GPU"));
  const auto json = ptb::test::run_cli("tune --json " + quote(bundle));
  CHECK(json.exit_code == 1);
  CHECK(contains(json.out, "no CUDA GPU"));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("tune", json.out) == "");
  CHECK(ptb::test::read_text(bundle / "bundle.json") == before);
  CHECK_FALSE(fs::exists(bundle / "tune.json"));
  const auto usage = ptb::test::run_cli("tune " + quote(bundle) + " --part nosuch");
  CHECK(usage.exit_code == 2);
}

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

}  // namespace

TEST_CASE("run on GPU: tune records the runtime's choices; ten later starts take them, alike, without a search") {
  PTB_REQUIRE_CLI_BUILTIN_GPU();
  PTB_REQUIRE_GPU_PACKAGES();
  const fs::path packages = *ptb::test::gpu_packages();
  size_t tuned_any = 0;
  // ATen's GEMM and convolution through the shims: cuBLASLt and cuDNN choose.
  for (const std::string stem : {"resnet18-default", "act-default", "convs-default", "linears-default"}) {
    CAPTURE(stem);
    if (!ptb::test::have_gpu_package(stem)) continue;
    ptb::test::TempDir dir;
    const fs::path bundle = dir / "bundle";
    std::string inputs;
    for (int i = 0; fs::exists(packages / (stem + ".in" + std::to_string(i) + ".npy")); ++i)
      inputs += (i ? "," : "") + quote(packages / (stem + ".in" + std::to_string(i) + ".npy"));
    std::string outputs;
    for (int i = 0; fs::exists(packages / (stem + ".out" + std::to_string(i) + ".npy")); ++i)
      outputs += (i ? "," : "") + quote(packages / (stem + ".out" + std::to_string(i) + ".npy"));
    const auto made = ptb::test::run_cli("export -o " + quote(bundle) + " --part p=" + quote(packages / (stem + ".pt2")) +
                                         " --example p=" + inputs + ":" + outputs);
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    const auto untuned = ptb::test::run_cli("run " + quote(bundle) + " --json --warmup 2 --iterations 20");
    REQUIRE_MESSAGE(untuned.exit_code == 0, untuned.err);
    const auto before = nlohmann::json::parse(untuned.out);

    const auto tuned = ptb::test::run_cli("tune " + quote(bundle) + " --json");
    REQUIRE_MESSAGE(tuned.exit_code == 0, tuned.err);
    const auto tune = nlohmann::json::parse(tuned.out);
    if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("tune", tuned.out) == "");
    CHECK(verify_json(bundle)["ok"] == true);

    std::set<std::string> digests;
    std::vector<double> first, next;
    uint64_t searched = 0, from_file = 0;
    for (int start = 0; start < 10; ++start) {
      const auto ran = ptb::test::run_cli("run " + quote(bundle) + " --json --warmup 2 --iterations 20");
      REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);
      const auto report = nlohmann::json::parse(ran.out);
      digests.insert(report["tuning"]["choices_sha256"].get<std::string>());
      searched += report["tuning"]["searched"].get<uint64_t>();
      from_file = report["tuning"]["from_file"].get<uint64_t>();
      first.push_back(report["first_call_ms"].get<double>());
      next.push_back(report["next_call_ms"].get<double>());
    }
    const double first_ms = median(first), next_ms = median(next);
    std::printf("[gpu] tune %s: %llu choices (%llu searched by tune); without the file first call %.3f ms, next "
                "%.3f ms; with it over 10 starts: first call median %.3f ms (max %.3f), next %.3f ms, ratio %.2f; "
                "%zu distinct choice sets, %llu searches\n",
                stem.c_str(), static_cast<unsigned long long>(tune["choices_for_gpu"].get<uint64_t>()),
                static_cast<unsigned long long>(tune["searched"].get<uint64_t>()), before["first_call_ms"].get<double>(),
                before["next_call_ms"].get<double>(), first_ms, *std::max_element(first.begin(), first.end()), next_ms,
                next_ms > 0 ? first_ms / next_ms : 0.0, digests.size(), static_cast<unsigned long long>(searched));
    CHECK(digests.size() == 1);
    CHECK(searched == 0);
    CHECK(from_file == tune["choices_for_gpu"].get<uint64_t>());
    CHECK(first_ms <= 2 * next_ms);
    ++tuned_any;
  }
  if (!tuned_any) ptb::test::skip("none of resnet18-default, act-default, convs-default, linears-default in PTB_GPU_PACKAGES");
}
