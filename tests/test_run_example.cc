// The example bundle (examples/, compiled for sm_90) on the GPU, through the
// CLI as a user runs it: export, verify with its test cases, run each part
// against eager PyTorch's outputs, refuse a wrong input; and a part whose
// kernels do not fit this GPU refused before anything is loaded.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "gpu_support.h"

using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::ScopedTmpdir;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path example(const std::string& name) { return fs::path(PTB_SOURCE_DIR) / "examples" / name; }

std::string q(const std::string& name) { return quote(example(name)); }

}  // namespace

// The example's parts are link_libtorch=False: the CLI serves them with its
// built-in runtime, in a build with or without LibTorch.
TEST_CASE("run on GPU: the example bundle exports, verifies its test cases and runs part by part") {
  PTB_REQUIRE_CLI_BUILTIN_GPU();
  ptb::test::TempDir dir;  // made before TMPDIR moves, so it is not counted below
  ScopedTmpdir tmp;        // the CLI inherits TMPDIR: what it leaves there shows
  const std::string bundle = quote(dir / "bundle");
  auto exported = run_cli("export -o " + bundle + " --part encoder=" + q("encoder.pt2") + " --example encoder=" +
                          q("encoder.in0.npy") + ":" + q("encoder.out0.npy") + " --part action_head=" +
                          q("action_head.pt2") + " --example action_head=" + q("action_head.in0.npy") + "," +
                          q("action_head.in1.npy") + ":" + q("action_head.out0.npy"));
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);

  // verify runs each part's recorded test case on this GPU.
  auto verified = run_cli("verify " + bundle + " --json");
  INFO(verified.err);
  CHECK(verified.exit_code == 0);
  const Json report = Json::parse(verified.out);
  int test_cases = 0;
  for (const Json& check : report["checks"]) {
    CHECK_MESSAGE(check["status"] != "fail", check.dump());
    if (check["check"] == "testcase" && check["status"] == "pass")
      ++test_cases;
  }
  CHECK(test_cases == 2);

  auto encoder = run_cli("run " + bundle + " --part encoder --input 0=" + q("encoder.in0.npy") + " --expect 0=" +
                         q("encoder.out0.npy") + " --atol 1e-4 --iterations 200 --json");
  INFO(encoder.err);
  REQUIRE(encoder.exit_code == 0);
  const Json encoder_run = Json::parse(encoder.out);
  CHECK(encoder_run["checks"][0]["passed"] == true);
  CHECK_MESSAGE(encoder_run["runtime"]["kind"] == "builtin", encoder_run["runtime"].dump());
  auto head = run_cli("run " + bundle + " --part action_head --input 0=" + q("action_head.in0.npy") + " --input 1=" +
                      q("action_head.in1.npy") + " --expect 0=" + q("action_head.out0.npy") +
                      " --iterations 200 --json");
  INFO(head.err);
  REQUIRE(head.exit_code == 0);
  const Json head_run = Json::parse(head.out);
  CHECK(head_run["checks"][0]["passed"] == true);
  std::printf("[gpu] example bundle: verify %zu checks, 2 test cases reproduced; encoder median %.1f us, "
              "action_head median %.1f us\n",
              report["checks"].size(), encoder_run["timing"]["median_ms"].get<double>() * 1000,
              head_run["timing"]["median_ms"].get<double>() * 1000);

  // The image given to the action head: refused before loading, by the signature.
  auto wrong = run_cli("run " + bundle + " --part action_head --input 0=" + q("encoder.in0.npy"));
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.empty());
  CHECK_MESSAGE(wrong.err.find("holds float32 [1, 3, 32, 32]; input 0 of forward takes float32 [1, 32]") !=
                    std::string::npos,
                wrong.err);
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
}

TEST_CASE("run on GPU: a part whose kernels do not fit this GPU is refused before loading") {
  PTB_REQUIRE_CLI_BUILTIN_GPU();
  ScopedTmpdir tmp;
  // Compiled for sm_120 only (Blackwell): nothing in it runs on this GPU.
  auto refused = run_cli("run " + quote(ptb::test::fixture("cuda/sm120/model.pte")) + " --random");
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK_MESSAGE(refused.err.find("no variant for sm_") != std::string::npos, refused.err);
  CHECK(refused.err.find("cannot load") == std::string::npos);
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
  std::printf("[gpu] sm_120 part on this GPU: %s", refused.err.c_str());
}
