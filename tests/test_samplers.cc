// Samplers: a program that draws its own noise never reproduces
// its outputs, so its example gives inputs only (--example P=IN.npy:). The
// test case then checks each output's dtype and shape against the signature
// and that its values are finite, and verify says it compared no values.
// The outputs' signature of a .pt2 comes from the package's generated
// wrapper source, read here from AOTInductor's own mlp_et.pt2.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ptbundle/base/dtype.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/export/export.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/results/tolerance.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;

namespace {


std::string example_inputs_only() {
  return " --part mlp=" + quote(fixture("aoti/mlp_et.pt2")) + " --example mlp=" + quote(fixture("aoti/mlp_et.in0.npy")) + ":";
}

}  // namespace

TEST_CASE("samplers: --example with nothing after ':' gives inputs only") {
  auto inputs_only = parse_example_argument("p=a.npy,b.npy:");
  REQUIRE_MESSAGE(inputs_only.ok(), inputs_only.error().message);
  CHECK(inputs_only->first == "p");
  CHECK(inputs_only->second.inputs.size() == 2);
  CHECK(inputs_only->second.outputs.empty());
  auto both = parse_example_argument("p=a.npy:o.npy");
  REQUIRE(both.ok());
  CHECK(both->second.outputs.size() == 1);
  auto no_inputs = parse_example_argument("p=:o.npy");
  REQUIRE_FALSE(no_inputs.ok());
  CHECK(contains(no_inputs.error().message, "expected at least one input file before ':'"));
  auto no_colon = parse_example_argument("p=a.npy");
  REQUIRE_FALSE(no_colon.ok());
  CHECK(contains(no_colon.error().message, "nothing after ':' for a program that draws its own noise"));
  CHECK_FALSE(parse_example_argument("p=a.npy,:").ok());
}

TEST_CASE("samplers: AOTInductor's wrapper source gives the counts and each output's dtype and sizes") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(fixture("aoti/mlp_et.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  auto source = pt2_wrapper_source(*package, package->models().front());
  REQUIRE(source.ok());
  REQUIRE(source->has_value());
  auto counts = pt2_wrapper_counts(**source);
  REQUIRE(counts.has_value());
  CHECK(counts->inputs == 1);
  CHECK(counts->outputs == 1);
  CHECK(counts->constants == 3);
  auto outputs = pt2_wrapper_outputs(**source, counts->outputs);
  REQUIRE(outputs.size() == 1);
  REQUIRE(outputs[0].has_value());
  // What eager PyTorch returned for this program (mlp_et.out0.npy).
  auto expected = NpyFile::open(fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE(expected.ok());
  CHECK(outputs[0]->scalar_type == expected->header().scalar_type);
  std::vector<int64_t> shape(expected->header().shape.begin(), expected->header().shape.end());
  CHECK(outputs[0]->sizes == shape);

  // Text that is not a wrapper's: nothing known, no guess.
  CHECK_FALSE(pt2_wrapper_counts("int main() {}").has_value());
  CHECK_FALSE(pt2_wrapper_counts("AOTInductorModelBase(1, -2, 3,").has_value());
  auto unknown = pt2_wrapper_outputs("output_handles[0] = buf3.release();", 2);
  REQUIRE(unknown.size() == 2);
  CHECK_FALSE(unknown[0].has_value());
  CHECK_FALSE(unknown[1].has_value());
  // A symbolic size (a dynamic dimension) is not a constant signature.
  const std::string symbolic =
      "static constexpr int64_t int_array_0[] = {s77, 8L};\n"
      "AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, "
      "cached_torch_device_type_cuda, this->device_idx_, &buf0_handle));\n"
      "output_handles[0] = buf0.release();\n";
  CHECK_FALSE(pt2_wrapper_outputs(symbolic, 1)[0].has_value());
}

TEST_CASE("samplers: export records inputs only, and verify checks the file and says values are not compared") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  auto result = run_cli("export -o " + quote(bundle) + example_inputs_only() + " --json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  auto document = nlohmann::json::parse(result.out);
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("export", result.out) == "");

  auto manifest = read_manifest(bundle.string());
  REQUIRE_MESSAGE(manifest.ok(), manifest.error().message);
  const ManifestPart& part = *manifest->find_part("mlp");
  REQUIRE(part.testcase.has_value());
  CHECK(part.testcase->inputs == 1);
  CHECK(part.testcase->outputs == 1);
  REQUIRE(part.testcase->output_checks.size() == 1);
  CHECK_FALSE(part.testcase->output_checks[0].compare_values);
  CHECK(contains(part.testcase->output_checks[0].rule, "values not compared"));
  // The signature the wrapper gives: float32 [4, 8].
  REQUIRE(part.methods.size() == 1);
  REQUIRE(part.methods[0].outputs.size() == 1);
  CHECK(part.methods[0].outputs[0].dtype == "float32");
  CHECK(part.methods[0].outputs[0].shape == std::vector<int64_t>{4, 8});
  auto json = nlohmann::json::parse(ptb::test::read_text(bundle / "bundle.json"));
  CHECK(json["parts"][0]["testcase"]["output_checks"][0]["compare"] == "dtype_shape_finite");
  if (ptb::test::have_jsonschema())
    CHECK(ptb::test::schema_problem("bundle", ptb::test::read_text(bundle / "bundle.json")) == "");

  // The test-case file holds the input and no expected output.
  auto testcase = PtdFile::open((bundle / "testcases/mlp.ptd").string());
  REQUIRE_MESSAGE(testcase.ok(), testcase.error().message);
  CHECK(testcase->find(testcase_key("forward", false, 0)) != nullptr);
  CHECK(testcase->find(testcase_key("forward", true, 0)) == nullptr);

  auto verify = run_cli("verify " + quote(bundle) + " --gpu sm_90 --verbose");
  CHECK_MESSAGE(verify.exit_code == 0, (verify.out + verify.err));
  CHECK(contains(verify.out, "output(s) without expected values (dtype, shape and finiteness only)"));
  auto verify_json = run_cli("verify " + quote(bundle) + " --gpu sm_90 --json");
  CHECK(verify_json.exit_code == 0);
  CHECK(contains(verify_json.out, "without expected values"));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("verify", verify_json.out) == "");

  // A hand-edited manifest that says values are compared now lacks the key.
  json["parts"][0]["testcase"]["output_checks"][0]["compare"] = "values";
  {
    std::ofstream out(bundle / "bundle.json", std::ios::trunc);
    out << json.dump(2);
  }
  auto edited = run_cli("verify " + quote(bundle) + " --gpu sm_90");
  CHECK(edited.exit_code == 1);
  CHECK(contains(edited.out, "lacks key 'forward.output.0'"));
}

TEST_CASE("samplers: an output without expected values is checked by dtype, shape and finiteness") {
  std::vector<float> values{0.5f, -1.0f, 2.0f, 3.0f};
  HostTensor good{6, {2, 2}, std::vector<uint8_t>(16)};
  std::memcpy(good.data.data(), values.data(), 16);
  ExpectedOutput want;
  want.index = 0;
  want.name = "output 0";
  want.tensor = {6, {2, 2}, Bytes()};
  want.compare_values = false;
  auto passed = compare_outputs({good}, {want});
  REQUIRE(passed.size() == 1);
  CHECK(passed[0].passed());
  CHECK_FALSE(passed[0].values_compared);
  const std::string verdict = test_case_verdict("noise", passed);
  CHECK(contains(verdict, "part noise ran its test case (1 output of the dtype and shape its signature gives, every value finite"));
  CHECK(contains(verdict, "values of output 0 not compared: the test case records inputs only"));

  values[2] = std::numeric_limits<float>::quiet_NaN();
  HostTensor nan_out = good;
  std::memcpy(nan_out.data.data(), values.data(), 16);
  auto nan_check = compare_outputs({nan_out}, {want});
  CHECK_FALSE(nan_check[0].passed());
  CHECK(contains(nan_check[0].problem, "1 of 4 values are not finite (element 2 is nan)"));
  CHECK(contains(test_case_verdict("noise", nan_check), "does not reproduce its test case"));

  HostTensor wrong_shape{6, {4}, good.data};
  CHECK(contains(compare_outputs({wrong_shape}, {want})[0].problem, "shape [4], expected [2, 2] (the method's signature)"));
  HostTensor wrong_dtype{5, {2, 2}, std::vector<uint8_t>(8)};
  CHECK(contains(compare_outputs({wrong_dtype}, {want})[0].problem, "dtype float16, expected float32"));

  // Beside a compared output, the verdict names which were not compared.
  ExpectedOutput compared;
  compared.index = 1;
  compared.name = "output 1";
  compared.tensor = tensor_bytes(good);
  compared.tolerance = output_tolerance(compared.tensor);
  auto mixed = compare_outputs({good, good}, {want, compared});
  const std::string both = test_case_verdict("noise", mixed);
  CHECK(contains(both, "part noise reproduces its test case (1 output, max abs diff 0.00e+00; values of output 0 not compared"));
}

TEST_CASE("samplers: PyTorch's own sampler package (tests/packages/sampler.pt2) exports with inputs only") {
  const auto here = std::filesystem::path(__FILE__).parent_path() / "packages";
  if (!std::filesystem::exists(here / "sampler.pt2")) {
    ptb::test::skip("tests/packages/sampler.pt2 is absent (tests/packages/make_packages.py makes it on a GPU machine)");
    return;
  }
  TempDir dir;
  auto bundle = dir / "bundle";
  auto exported = run_cli("export -o " + quote(bundle) + " --part noise=" + quote(here / "sampler.pt2") +
                          " --example noise=" + quote(here / "sampler.in0.npy") + ":");
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  const ManifestPart& part = *manifest->find_part("noise");
  REQUIRE(part.methods.size() == 1);
  REQUIRE(part.methods[0].outputs.size() == 1);
  // What eager PyTorch returned (one draw): its dtype and shape, read from the wrapper.
  auto drawn = NpyFile::open((here / "sampler.out0.npy").string());
  REQUIRE(drawn.ok());
  CHECK(part.methods[0].outputs[0].dtype == scalar_type_name(drawn->header().scalar_type));
  std::vector<int64_t> shape(drawn->header().shape.begin(), drawn->header().shape.end());
  CHECK(part.methods[0].outputs[0].shape == shape);
  REQUIRE(part.testcase->output_checks.size() == 1);
  CHECK_FALSE(part.testcase->output_checks[0].compare_values);
  auto verified = run_cli("verify " + quote(bundle) + " --gpu sm_90 --verbose");
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  CHECK(contains(verified.out, "without expected values"));

  // Its output file, if given, fixes the output's dtype and shape only: the
  // library draws its own noise, so no run reproduces eager's draw (where
  // the wrapper source cannot say an output's shape, this is the way).
  auto with_outputs = run_cli("export -o " + quote(dir / "b2") + " --part noise=" + quote(here / "sampler.pt2") +
                              " --example noise=" + quote(here / "sampler.in0.npy") + ":" + quote(here / "sampler.out0.npy"));
  REQUIRE_MESSAGE(with_outputs.exit_code == 0, with_outputs.err);
  CHECK(contains(with_outputs.out, "draws its own noise"));
  auto sampled = read_manifest((dir / "b2").string());
  REQUIRE(sampled.ok());
  const ManifestPart& sampled_part = *sampled->find_part("noise");
  REQUIRE(sampled_part.methods[0].outputs.size() == 1);
  CHECK(sampled_part.methods[0].outputs[0].shape == shape);
  REQUIRE(sampled_part.testcase->output_checks.size() == 1);
  CHECK_FALSE(sampled_part.testcase->output_checks[0].compare_values);
  CHECK(contains(sampled_part.testcase->output_checks[0].rule, "aoti_torch_cuda_randint_low_out"));
  auto sampled_verify = run_cli("verify " + quote(dir / "b2") + " --gpu sm_90");
  CHECK_MESSAGE(sampled_verify.exit_code == 0, (sampled_verify.out + sampled_verify.err));
}
