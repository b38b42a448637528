// Dynamic dims of AOTInductor programs: the bounds live only in the
// library's input-check messages (aoti_input_bounds.h). Read from
// tests/packages/dynbatch.pt2, PyTorch's own package of a program exported
// with Dim("batch", min=1, max=256) (its checks say 2..256), and from
// synthesized bytes for what PyTorch does not write.
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <string>

#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/kernels/aoti_input_bounds.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;

namespace {

const std::filesystem::path kPackages = std::filesystem::path(__FILE__).parent_path() / "packages";


AotiInputBounds bounds_of(const std::string& text) {
  return read_aoti_input_bounds(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// Literals as a compiled library keeps them: NUL-terminated, apart.
std::string literals(std::initializer_list<const char*> items) {
  std::string out;
  for (const char* item : items) out += std::string(item) + '\0' + "padding padding padding" + '\0';
  return out;
}

bool have_dynbatch() {
  if (std::filesystem::exists(kPackages / "dynbatch.pt2")) return true;
  ptb::test::skip("tests/packages/dynbatch.pt2 is absent (tests/packages/make_packages.py makes it on a GPU machine)");
  return false;
}

// A float32 [batch, 64] input of zeros.
std::string write_batch(const TempDir& dir, uint64_t batch) {
  const std::string path = (dir / ("b" + std::to_string(batch) + ".npy")).string();
  std::vector<uint8_t> data(batch * 64 * 4);
  const uint64_t shape[] = {batch, 64};
  REQUIRE(write_npy(path, 6, shape, Bytes(data.data(), data.size())).ok());
  return path;
}

}  // namespace

TEST_CASE("dyn: dynbatch.pt2's library and wrapper source both say input 0 dim 0 is 2..256, and nothing else") {
  if (!have_dynbatch()) return;
  auto package = Pt2Package::open((kPackages / "dynbatch.pt2").string());
  REQUIRE(package.ok());
  const Pt2Model& model = package->models().at(0);
  auto library = package->read_entry(model.wrapper_library, 64 << 20);
  REQUIRE(library.ok());
  AotiInputBounds from_library = read_aoti_input_bounds(Bytes(library->data(), library->size()));
  REQUIRE(from_library.dims.size() == 1);
  CHECK(from_library.dims[0].input == 0);
  CHECK(from_library.dims[0].dim == 0);
  CHECK(from_library.dims[0].min == 2);
  CHECK(from_library.dims[0].max == 256);
  CHECK(from_library.problems.empty());
  CHECK(bounds_text(from_library.dims[0]) == "2..256");

  auto source = pt2_wrapper_source(*package, model);
  REQUIRE(source.ok());
  REQUIRE(source->has_value());
  AotiInputBounds from_source = bounds_of(**source);
  REQUIRE(from_source.dims.size() == 1);
  CHECK(from_source.dims[0].min == 2);
  CHECK(from_source.dims[0].max == 256);
}

TEST_CASE("dyn: a size outside the bounds is refused naming input, dim, size and bounds") {
  AotiInputBounds bounds = bounds_of(literals({"input_handles[0]: dim value is too small at 0, ",
                                               "input_handles[0]: dim value is too large at 0, ",
                                               "expected it to be >= 2, ", "expected to be <= 256, "}));
  REQUIRE(bounds.dims.size() == 1);
  CHECK_FALSE(bounds_violation(bounds, 0, {2, 64}));
  CHECK_FALSE(bounds_violation(bounds, 0, {256, 64}));
  CHECK_FALSE(bounds_violation(bounds, 1, {1, 64}));  // another input: not checked
  auto small = bounds_violation(bounds, 0, {1, 64});
  REQUIRE(small);
  CHECK(*small == "input 0 dim 0 is 1; this program takes 2..256 there "
                  "(Inductor specializes sizes 0 and 1: export a batch of at least 2, or pad)");
  auto large = bounds_violation(bounds, 0, {257, 64});
  REQUIRE(large);
  CHECK(contains(*large, "input 0 dim 0 is 257; this program takes 2..256 there"));
}

TEST_CASE("dyn: run refuses dynbatch.pt2 a batch of 1 before the library is called") {
  if (!have_dynbatch()) return;
  TempDir dir;
  // No GPU given: the part opens here, its one variant unchecked.
  auto part = open_run_part((kPackages / "dynbatch.pt2").string(), RunPartOptions{});
  REQUIRE(part.ok());
  REQUIRE(part->input_bounds.dims.size() == 1);

  const std::string one = write_batch(dir, 1);
  auto refused = bind_inputs(InputArguments{{"0=" + one}, false, 0}, *part, {"arg4_1"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::Invalid);
  CHECK(contains(refused.error().message, one + ": input 0 dim 0 is 1; this program takes 2..256 there"));

  auto taken = bind_inputs(InputArguments{{(kPackages / "dynbatch.b37.in0.npy").string()}, false, 0}, *part, {"arg4_1"});
  CHECK(taken.ok());

  // The CLI: refused with exit 1 (a wrong input) and, with --json, one
  // document; on a machine without a GPU it fails earlier, at discovery.
  auto cli = run_cli("run --json " + quote(kPackages / "dynbatch.pt2") + " --input " + quote(one));
  CHECK(cli.exit_code != 0);
  CHECK(nlohmann::json::accept(cli.out));
}

TEST_CASE("dyn: inspect shows dynbatch.pt2's dynamic dim in text and JSON") {
  if (!have_dynbatch()) return;
  auto text = run_cli("inspect " + quote(kPackages / "dynbatch.pt2"));
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, "Dynamic dims (the library's checks): input 0 dim 0: 2..256"));
  auto json = run_cli("inspect --json " + quote(kPackages / "dynbatch.pt2"));
  REQUIRE(json.exit_code == 0);
  auto doc = nlohmann::json::parse(json.out);
  const auto& dims = doc["files"][0]["models"][0]["wrapper_library"]["runtime"]["dynamic_dims"];
  REQUIRE(dims.size() == 1);
  CHECK(dims[0] == nlohmann::json::parse(R"({"input": 0, "dim": 0, "min": 2, "max": 256})"));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("inspect", json.out) == "");
  // A static program says nothing of dynamic dims.
  auto fixed = run_cli("inspect " + quote(kPackages / "weightless.pt2"));
  CHECK_FALSE(contains(fixed.out, "Dynamic dims"));
}

TEST_CASE("dyn: bounds that cannot be paired with their dims stay unknown") {
  // Two dims with different upper bounds: a library does not say which is whose.
  AotiInputBounds two = bounds_of(literals({"input_handles[0]: dim value is too small at 0, ",
                                            "input_handles[0]: dim value is too large at 0, ",
                                            "input_handles[1]: dim value is too small at 1, ",
                                            "input_handles[1]: dim value is too large at 1, ",
                                            "expected it to be >= 2, ", "expected to be <= 256, ",
                                            "expected to be <= 1024, "}));
  REQUIRE(two.dims.size() == 2);
  CHECK(two.dims[0].min == 2);
  CHECK(two.dims[1].min == 2);
  CHECK_FALSE(two.dims[0].max);
  CHECK_FALSE(two.dims[1].max);
  CHECK(bounds_text(two.dims[1]) == "2..?");
  CHECK(two.problems.size() == 1);
  CHECK_FALSE(bounds_violation(two, 0, {100000, 64}));  // an unknown bound refuses nothing
  // The wrapper source pairs each bound with the check it follows.
  AotiInputBounds source = bounds_of(
      "ss << \"input_handles[0]: dim value is too large at 0, \"\n << \"expected to be <= 256, \" << \"but got: \"\n"
      "ss << \"input_handles[1]: dim value is too large at 1, \"\n << \"expected to be <= 1024, \" << \"but got: \"\n");
  REQUIRE(source.dims.size() == 2);
  CHECK(source.dims[0].max == 256);
  CHECK(source.dims[1].max == 1024);
}

TEST_CASE("dyn: hostile bytes give no bounds or a problem, never a crash") {
  CHECK(bounds_of("").dims.empty());
  CHECK(bounds_of("input_handles[").dims.empty());
  CHECK(bounds_of("input_handles[0]: dim value is too small at ").dims.empty());
  CHECK(bounds_of("input_handles[0]: dim value is too small at 0").dims.empty());   // no ", "
  CHECK(bounds_of("input_handles[x]: dim value is too small at 0, ").dims.empty());
  // Numbers too long to be sizes are ignored, not wrapped.
  CHECK(bounds_of("input_handles[99999999999999999999999]: dim value is too small at 0, ").dims.empty());
  AotiInputBounds huge_dim = bounds_of("input_handles[0]: dim value is too small at 99999999999, ");
  CHECK(huge_dim.dims.empty());
  CHECK(huge_dim.problems.size() == 1);
  AotiInputBounds absurd = bounds_of(literals({"input_handles[0]: dim value is too small at 0, ",
                                               "expected it to be >= 999999999999999999999999, ",
                                               "expected it to be >= , "}));
  REQUIRE(absurd.dims.size() == 1);
  CHECK_FALSE(absurd.dims[0].min);
  CHECK(absurd.problems.size() >= 2);
  // Many checks: bounded, and the rest reported once.
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "input_handles[" + std::to_string(i) + "]: dim value is too small at 0, " + '\0';
  AotiInputBounds capped = bounds_of(many);
  CHECK(capped.dims.size() == kMaxAotiDynamicDims);
  CHECK(capped.problems.size() <= 16);
  // Random bytes around real literals: the literals are still read.
  std::string noise(1 << 16, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 2654435761u) >> 13);
  AotiInputBounds mixed = bounds_of(noise + literals({"input_handles[2]: dim value is too large at 1, ",
                                                     "expected to be <= 7, "}) + noise);
  REQUIRE(mixed.dims.size() == 1);
  CHECK(mixed.dims[0].input == 2);
  CHECK(mixed.dims[0].max == 7);
}

TEST_CASE("dyn: the library in a .pte's named data gives the same bounds (dynbatch.pt2 exported)") {
  if (!have_dynbatch()) return;
  TempDir dir;
  const auto bundle = dir / "bundle";
  auto exported = run_cli("export -o " + quote(bundle) + " --part dyn=" + quote(kPackages / "dynbatch.pt2") +
                          " --example dyn=" + quote(kPackages / "dynbatch.b37.in0.npy") + ":" +
                          quote(kPackages / "dynbatch.b37.out0.npy"));
  REQUIRE(exported.exit_code == 0);
  auto part = open_run_part(bundle.string(), RunPartOptions{});
  REQUIRE(part.ok());
  REQUIRE(part->input_bounds.dims.size() == 1);
  CHECK(bounds_text(part->input_bounds.dims[0]) == "2..256");

  auto text = run_cli("inspect " + quote(bundle / "dyn.pte"));
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, "float32  [2..256, 64]"));
  auto json = run_cli("inspect --json " + quote(bundle / "dyn.pte"));
  REQUIRE(json.exit_code == 0);
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["files"][0]["methods"][0]["inputs"][0]["dim_bounds"] ==
        nlohmann::json::parse(R"([{"min": 2, "max": 256}, null])"));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("inspect", json.out) == "");

  // The method takes every batch the library does: its input and the output
  // whose batch follows it are bounded at 256 (ExecuTorch's DYNAMIC_BOUND),
  // not fixed at the example's 37, and the test case at 37 still verifies.
  const auto& method = doc["files"][0]["methods"][0];
  CHECK(method["inputs"][0]["dynamism"] == "dynamic_bound");
  CHECK(method["inputs"][0]["shape"] == nlohmann::json::parse("[256, 64]"));
  CHECK(method["outputs"][0]["dynamism"] == "dynamic_bound");
  CHECK(method["outputs"][0]["shape"][0] == 256);
  auto verified = run_cli("verify " + quote(bundle));
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  auto report = run_cli("inspect --json " + quote(bundle));
  REQUIRE(report.exit_code == 0);
  CHECK(contains(report.out, "dynamic_bound"));
}

TEST_CASE("dyn: an example outside the library's bounds is refused by export, naming the dim and the bounds") {
  if (!have_dynbatch()) return;
  TempDir dir;
  // A batch of 1: Inductor specialized it away (the library takes 2..256).
  const std::string input = write_batch(dir, 1);
  auto exported = run_cli("export -o " + quote(dir / "bundle") + " --part dyn=" + quote(kPackages / "dynbatch.pt2") +
                          " --example dyn=" + quote(input) + ":" + quote(kPackages / "dynbatch.b37.out0.npy"));
  CHECK(exported.exit_code == 1);
  CHECK_MESSAGE(contains(exported.err, "input 0 dim 0 is 1; "), exported.err);
  CHECK_MESSAGE(contains(exported.err, "takes 2..256 there"), exported.err);
  CHECK(!std::filesystem::exists(dir / "bundle" / "dyn.pte"));
}
