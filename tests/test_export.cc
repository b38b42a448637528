// ptbundle export against the real exports and packages in ../shared/fixtures.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <set>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/export/export.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/results/tolerance.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

const char* kSm80WeightsSha = "124491882eea639cb3cee15d51d0f96e386ebde725e6e60b43ec7d1574a2718c";
const char* kSm86WeightsSha = "ff4bdf912fafe715b1a8b56113dd4c3b0f92bb2fc051f390b419cdb4537405d3";

std::string file_sha(const fs::path& path) {
  auto digest = sha256_file(path.string());
  REQUIRE(digest.ok());
  return *digest;
}

PartRequest part(const std::string& name, const fs::path& program, std::optional<fs::path> data = std::nullopt) {
  PartRequest request;
  request.name = name;
  request.program = program.string();
  if (data) request.data_file = data->string();
  return request;
}

PartRequest aoti_part(const std::string& name, const std::string& stem) {
  PartRequest request = part(name, fixture("aoti/" + stem + ".pt2"));
  request.example = ExampleFiles{{fixture("aoti/" + stem + ".in0.npy").string()},
                                 {fixture("aoti/" + stem + ".out0.npy").string()}};
  return request;
}

Result<ExportReport> run_export(const fs::path& dir, std::vector<PartRequest> parts, bool force = false) {
  ExportOptions options;
  options.output_dir = dir.string();
  options.parts = std::move(parts);
  options.force = force;
  options.tool_version = "test";
  return export_parts(options);
}

// Every name in the folder, recursively, relative to it.
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return names;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    names.insert(fs::relative(entry.path(), dir).string());
  return names;
}

std::string spec_value(const DelegateInfo& delegate, const char* key) {
  const auto* spec = delegate.find_spec(key);
  return spec ? std::string(spec->value.begin(), spec->value.end()) : std::string("<absent>");
}


bool have_flatc() { return std::system("command -v flatc >/dev/null 2>&1") == 0; }

nlohmann::json flatc_json(const fs::path& file, const TempDir& scratch) {
  auto out_dir = scratch / ("flatc-" + std::to_string(std::hash<std::string>{}(file.string())));
  fs::create_directories(out_dir);
  std::string schemas = std::string(PTB_SOURCE_DIR) + "/schemas";
  std::string command = "flatc --raw-binary -t --strict-json -I " + quote(schemas) + " -o " + quote(out_dir) + " " +
                        quote(schemas + "/program.fbs") + " -- " + quote(file) + " >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return nullptr;
  return nlohmann::json::parse(ptb::test::read_text(out_dir / (file.stem().string() + ".json")));
}

}  // namespace

TEST_CASE("export: an ExecuTorch CUDA export becomes a part with its own data name") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  auto result = run_export(bundle, {part("encoder", fixture("cuda/sm80/model.pte"))});
  REQUIRE_MESSAGE(result.ok(), result.error().message);
  CHECK(listing(bundle) == std::set<std::string>{"bundle.json", "encoder.pte", "encoder.ptd"});
  // The data file does not depend on the name: it is ExecuTorch's, byte for byte.
  CHECK(file_sha(bundle / "encoder.ptd") == kSm80WeightsSha);

  auto pte = PteFile::open((bundle / "encoder.pte").string());
  REQUIRE(pte.ok());
  auto methods = describe_methods(*pte);
  REQUIRE(methods.size() == 1);
  REQUIRE(methods[0].delegates.size() == 1);
  const auto& delegate = methods[0].delegates[0];
  CHECK(delegate.id == "CudaBackend");
  CHECK(spec_value(delegate, "data_name") == "encoder");
  CHECK(spec_value(delegate, "method_name") == "forward");
  CHECK(spec_value(delegate, "target_device") == "cuda:0");
  CHECK(to_hex(sha256(pte->delegate_payload(0, 0))) == "b242258fa327a241548b08343fd376f4d48c96688deddc875e0a946a601bb4b3");
  const char* so_key = "52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3_so_blob";
  REQUIRE(pte->find_named_data(so_key) != nullptr);
  CHECK(to_hex(sha256(pte->named_data_bytes(*pte->find_named_data(so_key)))) ==
        "52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3");
  REQUIRE(pte->segments().size() == 3);
  CHECK(pte->segments()[2].offset == 384);

  auto manifest = read_manifest(bundle.string());
  REQUIRE_MESSAGE(manifest.ok(), manifest.error().message);
  CHECK(manifest->ptbundle_version == "test");
  REQUIRE(manifest->parts.size() == 1);
  const auto& entry = manifest->parts[0];
  CHECK(entry.source.kind == "executorch");
  CHECK(entry.source.files == std::vector<std::string>{"model.pte", "aoti_cuda_blob.ptd"});
  CHECK(entry.data_name == "encoder");
  REQUIRE(entry.find_file(FileRole::Program) != nullptr);
  CHECK(entry.find_file(FileRole::Program)->size == fs::file_size(bundle / "encoder.pte"));
  CHECK(entry.find_file(FileRole::Program)->sha256 == file_sha(bundle / "encoder.pte"));
  CHECK(entry.find_file(FileRole::Data)->sha256 == kSm80WeightsSha);
  REQUIRE(entry.methods.size() == 1);
  CHECK(entry.methods[0].inputs[0].dtype == "float32");
  CHECK(entry.methods[0].inputs[0].shape == std::vector<int64_t>{4, 32});
  CHECK(entry.methods[0].outputs[0].shape == std::vector<int64_t>{4, 64});
  CHECK(entry.methods[0].delegates[0].data_name == "encoder");
  REQUIRE(entry.cuda.has_value());
  CHECK_FALSE(entry.cuda->built_on.has_value());
  bool sm80_cubin = false;
  for (const auto& target : entry.cuda->kernel_targets) sm80_cubin = sm80_cubin || (target.sm == 80 && target.kind == "cubin");
  CHECK(sm80_cubin);

  // flatc (an independent reader) sees ExecuTorch's program plus exactly one compile spec.
  if (!have_flatc()) return ptb::test::skip("flatc not found");
  auto ours = flatc_json(bundle / "encoder.pte", dir);
  auto theirs = flatc_json(fixture("cuda/sm80/model.pte"), dir);
  REQUIRE(!ours.is_null());
  auto& specs = ours["execution_plan"][0]["delegates"][0]["compile_specs"];
  REQUIRE(specs.size() == 4);
  CHECK(specs[3]["key"] == "data_name");
  specs.erase(3);
  CHECK(ours == theirs);
}

TEST_CASE("export: an existing data_name is replaced, and the only .ptd beside the program is found") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto result = run_export(dir / "b", {part("vision", fixture("cuda/named_sm90/model.pte"))});
  REQUIRE_MESSAGE(result.ok(), result.error().message);
  CHECK(result->parts[0].files.size() == 2);
  auto pte = PteFile::open((dir / "b" / "vision.pte").string());
  REQUIRE(pte.ok());
  auto methods = describe_methods(*pte);
  const auto& specs = methods[0].delegates[0].compile_specs;
  int data_names = 0;
  for (const auto& spec : specs) data_names += spec.key == "data_name";
  CHECK(data_names == 1);
  CHECK(spec_value(methods[0].delegates[0], "data_name") == "vision");
  CHECK(file_sha(dir / "b" / "vision.ptd") == file_sha(fixture("cuda/named_sm90/encoder.ptd")));
}

TEST_CASE("export: two parts in one folder keep their own weights") {
  PTB_REQUIRE_FIXTURES();
  // Both exports name their data file aoti_cuda_blob.ptd; their weights differ
  // in one float. Side by side in one folder, one overwrote the other.
  TempDir dir;
  auto bundle = dir / "bundle";
  auto first = run_export(bundle, {part("encoder", fixture("cuda/sm80/model.pte")),
                                   part("head", fixture("cuda/bad_weights_sm86/model.pte"))});
  REQUIRE_MESSAGE(first.ok(), first.error().message);
  auto second = run_export(bundle, {aoti_part("mlp", "mlp_et")});
  REQUIRE_MESSAGE(second.ok(), second.error().message);

  CHECK(file_sha(bundle / "encoder.ptd") == kSm80WeightsSha);
  CHECK(file_sha(bundle / "head.ptd") == kSm86WeightsSha);
  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  REQUIRE(manifest->parts.size() == 3);
  for (const auto& entry : manifest->parts) {
    auto pte = PteFile::open((bundle / (entry.name + ".pte")).string());
    REQUIRE(pte.ok());
    CHECK(spec_value(describe_methods(*pte)[0].delegates[0], "data_name") == entry.name);
    CHECK(entry.find_file(FileRole::Data)->sha256 == file_sha(bundle / (entry.name + ".ptd")));
  }
  CHECK(manifest->find_part("head")->cuda->kernel_targets.front().sm == 86);
}

TEST_CASE("export: an AOTInductor package becomes a .pte with one CudaBackend delegate in ExecuTorch's layout") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  ExportOptions options;
  options.output_dir = bundle.string();
  options.parts = {aoti_part("mlp", "mlp_et")};
  options.atol = 1e-4;
  options.rtol = 2e-4;
  options.tool_version = "test";
  auto result = export_parts(options);
  REQUIRE_MESSAGE(result.ok(), result.error().message);
  CHECK(listing(bundle) == std::set<std::string>{"bundle.json", "mlp.pte", "mlp.ptd", "testcases", "testcases/mlp.ptd"});

  auto package = Pt2Package::open(fixture("aoti/mlp_et.pt2").string());
  REQUIRE(package.ok());
  const auto& model = package->models().front();
  auto library = package->read_entry(model.wrapper_library, 64 << 20);
  auto blob = package->read_entry(*model.weights_blob, 64 << 20);
  REQUIRE(library.ok());
  REQUIRE(blob.ok());
  std::string so_key = to_hex(sha256(*library)) + "_so_blob";
  std::string weights_key = to_hex(sha256(*blob)) + "_weights_blob";

  auto pte = PteFile::open((bundle / "mlp.pte").string());
  REQUIRE_MESSAGE(pte.ok(), pte.error().message);
  auto methods = describe_methods(*pte);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].name == "forward");
  REQUIRE(methods[0].inputs.size() == 1);
  CHECK(methods[0].inputs[0].tensor->scalar_type == 6);
  CHECK(methods[0].inputs[0].tensor->sizes == std::vector<int64_t>{4, 16});
  CHECK(methods[0].outputs[0].tensor->sizes == std::vector<int64_t>{4, 8});
  CHECK(methods[0].operators == std::vector<std::string>{"et_copy::_h2d_copy.out", "et_copy::_d2h_copy.out"});
  REQUIRE(methods[0].delegates.size() == 1);
  const auto& delegate = methods[0].delegates[0];
  CHECK(delegate.id == "CudaBackend");
  CHECK(delegate.compile_specs.size() == 2);
  CHECK(spec_value(delegate, "method_name") == "forward");
  CHECK(spec_value(delegate, "data_name") == "mlp");
  auto payload = pte->delegate_payload(0, 0);
  CHECK(std::string(payload.begin(), payload.end()) == so_key + "\n" + weights_key);
  auto decoded = decode_cuda_payload(payload, "forward", "mlp.pte");
  REQUIRE(decoded.ok());
  CHECK(decoded->form == CudaPayloadForm::SingleBlob);
  const auto* so = pte->find_named_data(so_key);
  REQUIRE(so != nullptr);
  CHECK(pte->named_data_bytes(*so).size() == library->size());

  auto ptd = PtdFile::open((bundle / "mlp.ptd").string());
  REQUIRE(ptd.ok());
  REQUIRE(ptd->entries().size() == 1);
  CHECK(ptd->entries()[0].key == weights_key);
  CHECK(to_hex(sha256(ptd->bytes(ptd->entries()[0]))) == to_hex(sha256(*blob)));

  // The test case: the example as named tensors with layouts.
  auto testcase = PtdFile::open((bundle / "testcases" / "mlp.ptd").string());
  REQUIRE(testcase.ok());
  auto input = NpyFile::open(fixture("aoti/mlp_et.in0.npy").string());
  auto output = NpyFile::open(fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE(input.ok());
  REQUIRE(output.ok());
  const auto* in0 = testcase->find(testcase_key("forward", false, 0));
  const auto* out0 = testcase->find(testcase_key("forward", true, 0));
  REQUIRE(in0 != nullptr);
  REQUIRE(out0 != nullptr);
  CHECK(in0->key == "forward.input.0");
  REQUIRE(in0->layout.has_value());
  CHECK(in0->layout->scalar_type == 6);
  CHECK(in0->layout->sizes == std::vector<int32_t>{4, 16});
  CHECK(in0->layout->dim_order == std::vector<uint8_t>{0, 1});
  CHECK(out0->layout->sizes == std::vector<int32_t>{4, 8});
  CHECK(to_hex(sha256(testcase->bytes(*in0))) == to_hex(sha256(input->data())));
  CHECK(to_hex(sha256(testcase->bytes(*out0))) == to_hex(sha256(output->data())));

  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  const auto& entry = manifest->parts[0];
  CHECK(entry.source.kind == "aoti_package");
  REQUIRE(entry.cuda.has_value());
  REQUIRE(entry.cuda->built_on.has_value());
  CHECK(entry.cuda->built_on->compute_capability == "9.0");
  CHECK_FALSE(entry.cuda->built_on->name.has_value());
  bool sm90 = false;
  for (const auto& target : entry.cuda->kernel_targets) sm90 = sm90 || (target.sm == 90 && target.kind == "cubin");
  CHECK(sm90);
  REQUIRE(entry.testcase.has_value());
  CHECK(entry.testcase->atol == doctest::Approx(1e-4));
  CHECK(entry.testcase->rtol == doctest::Approx(2e-4));
  CHECK(entry.testcase->inputs == 1);
  CHECK(entry.find_file(FileRole::Testcase)->sha256 == file_sha(bundle / "testcases" / "mlp.ptd"));

  // Same shape of program as ExecuTorch's own CUDA export (sm80/model.pte):
  // values, memory placement, instructions and buffers, up to sizes.
  if (!have_flatc()) return ptb::test::skip("flatc not found");
  auto ours = flatc_json(bundle / "mlp.pte", dir)["execution_plan"][0];
  auto theirs = flatc_json(fixture("cuda/sm80/model.pte"), dir)["execution_plan"][0];
  for (auto* plan : {&ours, &theirs}) {
    for (auto& value : (*plan)["values"]) {
      value["val"].erase("sizes");
      value["val"]["allocation_info"].erase("memory_offset_low");
    }
    plan->erase("delegates");
    plan->erase("non_const_buffer_sizes");
  }
  CHECK(ours == theirs);
}

TEST_CASE("export: an example for an ExecuTorch program becomes its test case") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  std::vector<float> input(4 * 32, 0.5f), output(4 * 64, -1.0f);
  std::vector<uint64_t> in_shape = {4, 32}, out_shape = {4, 64};
  auto bytes = [](const std::vector<float>& v) { return Bytes(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4); };
  REQUIRE(write_npy((dir / "in.npy").string(), 6, in_shape, bytes(input)).ok());
  REQUIRE(write_npy((dir / "out.npy").string(), 6, out_shape, bytes(output)).ok());
  PartRequest request = part("enc", fixture("cuda/sm80/model.pte"));
  request.example = ExampleFiles{{(dir / "in.npy").string()}, {(dir / "out.npy").string()}};
  auto result = run_export(dir / "b", {request});
  REQUIRE_MESSAGE(result.ok(), result.error().message);
  auto testcase = PtdFile::open((dir / "b" / "testcases" / "enc.ptd").string());
  REQUIRE(testcase.ok());
  const auto* out0 = testcase->find("forward.output.0");
  REQUIRE(out0 != nullptr);
  CHECK(out0->layout->sizes == std::vector<int32_t>{4, 64});
  CHECK(to_hex(sha256(testcase->bytes(*out0))) == to_hex(sha256(bytes(output))));
  auto manifest = read_manifest((dir / "b").string());
  REQUIRE(manifest.ok());
  CHECK(manifest->parts[0].testcase->outputs == 1);

  // A second output file for a one-output method is refused.
  request.example->outputs.push_back((dir / "out.npy").string());
  auto refused = run_export(dir / "c", {request});
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "2 output file(s); method forward has 1 output(s)"));
  CHECK_FALSE(fs::exists(dir / "c"));
}

TEST_CASE("export: a package with PTX records the PTX target") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto result = run_export(dir / "b", {aoti_part("mlp", "mlp_et_ptx")});
  REQUIRE_MESSAGE(result.ok(), result.error().message);
  auto manifest = read_manifest((dir / "b").string());
  REQUIRE(manifest.ok());
  std::set<std::string> kinds;
  for (const auto& target : manifest->parts[0].cuda->kernel_targets) kinds.insert(target.kind);
  CHECK(kinds == std::set<std::string>{"cubin", "ptx"});
}

TEST_CASE("export: refusals name the problem and leave nothing behind") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  auto expect_refusal = [&](std::vector<PartRequest> parts, const std::string& text) {
    auto before = listing(bundle);
    auto result = run_export(bundle, std::move(parts));
    REQUIRE_FALSE(result.ok());
    CHECK_MESSAGE(contains(result.error().message, text), result.error().message);
    CHECK(listing(bundle) == before);
    return result.error();
  };

  SUBCASE("a package without an example") {
    auto error = expect_refusal({part("mlp", fixture("aoti/mlp_et.pt2"))}, "needs --example mlp=");
    CHECK(error.kind == ErrorKind::Usage);
  }
  SUBCASE("an example of the wrong shape for an ExecuTorch program") {
    PartRequest request = part("encoder", fixture("cuda/sm80/model.pte"));
    request.example = ExampleFiles{{fixture("aoti/mlp_et.in0.npy").string()}, {fixture("aoti/mlp_et.out0.npy").string()}};
    expect_refusal({request}, "shape [4, 16]; the method expects [4, 32]");
  }
  SUBCASE("bad names, one rule each") {
    expect_refusal({part("../x", fixture("cuda/sm80/model.pte"))}, "contains '/'");
    expect_refusal({part("nul.txt", fixture("cuda/sm80/model.pte"))}, "Windows device name");
    expect_refusal({part("x.ptd", fixture("cuda/sm80/model.pte"))}, "ends with \".ptd\"");
    expect_refusal({part(".x", fixture("cuda/sm80/model.pte"))}, "starts with '.'");
    expect_refusal({part("", fixture("cuda/sm80/model.pte"))}, "is empty");
  }
  SUBCASE("names that collide") {
    expect_refusal({part("enc", fixture("cuda/sm80/model.pte")), part("Enc", fixture("cuda/sm90/model.pte"))},
                   "\"enc\" and \"Enc\" differ only in case");
    REQUIRE(run_export(bundle, {part("enc", fixture("cuda/sm80/model.pte"))}).ok());
    expect_refusal({part("ENC", fixture("cuda/sm90/model.pte"))}, "differ only in case");
    auto error = expect_refusal({part("enc", fixture("cuda/sm90/model.pte"))}, "already has a part \"enc\"; use --force");
    CHECK(error.kind == ErrorKind::Usage);
  }
  SUBCASE("a missing data file") {
    TempDir lonely;
    fs::copy_file(fixture("cuda/sm80/model.pte"), lonely / "model.pte");
    expect_refusal({part("enc", lonely / "model.pte")}, "no data file was given or found beside it");
  }
  SUBCASE("a data file from another program") {
    TempDir other;
    PtdContents contents;
    std::vector<uint8_t> bytes(16, 1);
    contents.add("something_else", SegmentSource::memory(bytes));
    REQUIRE(write_ptd_file((other / "x.ptd").string(), contents).ok());
    expect_refusal({part("enc", fixture("cuda/sm80/model.pte"), other / "x.ptd")},
                   "needs the key \"cuda_fqn_weight:cuda:layer.weight\", which neither");
  }
  SUBCASE("a data file whose tensor has the wrong size") {
    TempDir other;
    auto original = PtdFile::open(fixture("cuda/sm80/aoti_cuda_blob.ptd").string());
    REQUIRE(original.ok());
    PtdContents contents;
    std::vector<uint8_t> short_bias(4, 0);
    contents.add("cuda_fqn_weight:cuda:layer.weight",
                 SegmentSource::file_range(original->file(), original->entries()[0].file_offset, original->entries()[0].size));
    contents.add("cuda_fqn_weight:cuda:layer.bias", SegmentSource::memory(short_bias));
    REQUIRE(write_ptd_file((other / "x.ptd").string(), contents).ok());
    expect_refusal({part("enc", fixture("cuda/sm80/model.pte"), other / "x.ptd")},
                   "\"cuda_fqn_weight:cuda:layer.bias\" with 256 bytes; the file holds 4 bytes");
  }
  SUBCASE("a backend that keeps its data inside the program") {
    TempDir other;
    auto original = PteFile::open(fixture("cuda/sm80/model.pte").string());
    REQUIRE(original.ok());
    std::unique_ptr<fb::ProgramT> program(original->program().UnPack());
    program->execution_plan[0]->delegates[0]->id = "MetalBackend";
    std::vector<SegmentSource> segments;
    for (const auto& s : original->segments()) segments.push_back(SegmentSource::file_range(original->file(), s.file_offset, s.size));
    REQUIRE(write_pte_file((other / "model.pte").string(), *program, segments).ok());
    expect_refusal({part("enc", other / "model.pte")}, "delegate 0 is MetalBackend, which keeps its data inside the .pte");
  }
  SUBCASE("an unreadable source") {
    auto error = expect_refusal({part("enc", dir / "missing.pte")}, "missing.pte: cannot open");
    CHECK(error.kind == ErrorKind::Io);
    TempDir other;
    REQUIRE(write_file_atomically((other / "model.pte").string(), std::string(100, 'x')).ok());
    expect_refusal({part("enc", other / "model.pte")}, "model.pte");
  }
  SUBCASE("a late failure undoes the earlier parts, scratch files included") {
    PartRequest bad = part("z", fixture("cuda/sm80/model.pte"), fixture("cuda/so/sm80.so"));
    expect_refusal({aoti_part("mlp", "mlp_et"), part("enc", fixture("cuda/sm80/model.pte")), bad}, "sm80.so");
    CHECK_FALSE(fs::exists(bundle));  // the folder this run created is gone too
  }
}

TEST_CASE("export: --force replaces a part and removes its files that no longer apply") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run_export(bundle, {aoti_part("p", "mlp_et")}).ok());
  CHECK(fs::exists(bundle / "testcases" / "p.ptd"));
  auto replaced = run_export(bundle, {part("p", fixture("cuda/bad_weights_sm86/model.pte"))}, true);
  REQUIRE_MESSAGE(replaced.ok(), replaced.error().message);
  CHECK(replaced->parts[0].replaced);
  CHECK_FALSE(fs::exists(bundle / "testcases" / "p.ptd"));
  // The new files take the names the old manifest did not use (p@1.*): the
  // old bundle stayed whole until bundle.json was renamed; its files are gone.
  CHECK_FALSE(fs::exists(bundle / "p.ptd"));
  CHECK_FALSE(fs::exists(bundle / "p.pte"));
  CHECK(file_sha(bundle / "p@1.ptd") == kSm86WeightsSha);
  auto again = run_export(bundle, {part("p", fixture("cuda/bad_weights_sm86/model.pte"))}, true);
  REQUIRE_MESSAGE(again.ok(), again.error().message);
  CHECK(file_sha(bundle / "p.ptd") == kSm86WeightsSha);  // and back: p@1 was in use
  CHECK_FALSE(fs::exists(bundle / "p@1.ptd"));
  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  REQUIRE(manifest->parts.size() == 1);
  CHECK(manifest->parts[0].source.kind == "executorch");
  CHECK_FALSE(manifest->parts[0].testcase.has_value());
}

TEST_CASE("export: stray files of a new part's name are refused without --force") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  REQUIRE(write_file_atomically((dir / "enc.ptd").string(), std::string("old")).ok());
  auto refused = run_export(dir.path(), {part("enc", fixture("cuda/sm80/model.pte"))});
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "enc.ptd exists but bundle.json does not list it"));
  CHECK(ptb::test::read_text(dir / "enc.ptd") == "old");
  REQUIRE(run_export(dir.path(), {part("enc", fixture("cuda/sm80/model.pte"))}, true).ok());
  CHECK(file_sha(dir / "enc.ptd") == kSm80WeightsSha);
}

TEST_CASE("export arguments: --part and --example shapes") {
  auto plain = parse_part_argument("enc=out/model.pte");
  REQUIRE(plain.ok());
  CHECK(plain->name == "enc");
  CHECK(plain->program == "out/model.pte");
  CHECK_FALSE(plain->data_file.has_value());
  // Only the last comma splits, and only before a .ptd name.
  auto with_data = parse_part_argument("enc=a,b/model.pte,blob.ptd");
  REQUIRE(with_data.ok());
  CHECK(with_data->program == "a,b/model.pte");
  CHECK(with_data->data_file == "blob.ptd");
  auto comma_in_name = parse_part_argument("enc=a,b/model.pte");
  REQUIRE(comma_in_name.ok());
  CHECK(comma_in_name->program == "a,b/model.pte");
  CHECK(parse_part_argument("enc").error().kind == ErrorKind::Usage);
  CHECK_FALSE(parse_part_argument("=x.pte").ok());
  CHECK_FALSE(parse_part_argument("enc=").ok());
  CHECK_FALSE(parse_part_argument("enc=,x.ptd").ok());

  auto example = parse_example_argument("head=a.npy,b.npy:c.npy");
  REQUIRE(example.ok());
  CHECK(example->first == "head");
  CHECK(example->second.inputs == std::vector<std::string>{"a.npy", "b.npy"});
  CHECK(example->second.outputs == std::vector<std::string>{"c.npy"});
  CHECK_FALSE(parse_example_argument("head=a.npy").ok());
  CHECK_FALSE(parse_example_argument("head=:c.npy").ok());
  CHECK_FALSE(parse_example_argument("head=a.npy,,b.npy:c.npy").ok());
}

TEST_CASE("export CLI: summary, --json, exit codes") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  auto text = ptb::test::run_cli("export -o " + quote(bundle) + " --part enc=" + quote(fixture("cuda/sm80/model.pte")));
  CHECK_MESSAGE(text.exit_code == 0, text.err);
  CHECK(contains(text.out, "exported 1 part into"));
  CHECK(contains(text.out, "enc.ptd 8.6 KiB"));

  auto json = ptb::test::run_cli("export -o " + quote(bundle) + " --json --part mlp=" + quote(fixture("aoti/mlp_et.pt2")) +
                                 " --example mlp=" + quote(fixture("aoti/mlp_et.in0.npy")) + ":" +
                                 quote(fixture("aoti/mlp_et.out0.npy")) + " --atol 0.01 --rtol 0");
  REQUIRE_MESSAGE(json.exit_code == 0, json.err);
  auto document = nlohmann::json::parse(json.out);
  CHECK(document["parts"][0]["name"] == "mlp");
  CHECK(document["parts"][0]["files"].size() == 3);
  CHECK(document["parts"][0]["files"][2]["path"] == "testcases/mlp.ptd");
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("export", json.out) == "");
  auto manifest = read_manifest(bundle.string());
  REQUIRE(manifest.ok());
  CHECK(manifest->parts.size() == 2);
  CHECK(manifest->find_part("mlp")->testcase->atol == doctest::Approx(0.01));
  REQUIRE(manifest->find_part("mlp")->testcase->output_checks.size() == 1);
  CHECK(manifest->find_part("mlp")->testcase->output_checks[0].atol == doctest::Approx(0.01));
  CHECK(contains(manifest->find_part("mlp")->testcase->output_checks[0].rule, "--atol/--rtol given to export"));

  // Without --atol/--rtol: the output's own, from its dtype and magnitude
  // (results/tolerance.h), the same function run --expect uses.
  auto derived = ptb::test::run_cli("export -o " + quote(dir / "derived") + " --part mlp=" + quote(fixture("aoti/mlp_et.pt2")) +
                                    " --example mlp=" + quote(fixture("aoti/mlp_et.in0.npy")) + ":" +
                                    quote(fixture("aoti/mlp_et.out0.npy")));
  REQUIRE_MESSAGE(derived.exit_code == 0, derived.err);
  auto derived_manifest = read_manifest((dir / "derived").string());
  REQUIRE(derived_manifest.ok());
  const ManifestTestcase& t = *derived_manifest->find_part("mlp")->testcase;
  REQUIRE(t.output_checks.size() == 1);
  auto out0 = NpyFile::open(fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE(out0.ok());
  Tolerance rule = output_tolerance({out0->header().scalar_type, out0->header().shape, out0->data()});
  CHECK(t.output_checks[0].atol == rule.atol);
  CHECK(t.output_checks[0].rtol == rule.rtol);
  CHECK(contains(t.output_checks[0].rule, "float32: 2048 ulp at max |expected|"));
  CHECK(t.atol == rule.atol);

  auto again = ptb::test::run_cli("export -o " + quote(bundle) + " --part enc=" + quote(fixture("cuda/sm80/model.pte")));
  CHECK(again.exit_code == 2);
  CHECK(contains(again.err, "ptbundle: error: "));
  CHECK(contains(again.err, "use --force"));
  auto bad_name = ptb::test::run_cli("export -o " + quote(bundle) + " --part 'a/b=" + fixture("cuda/sm80/model.pte").string() + "'");
  CHECK(bad_name.exit_code == 1);
  CHECK(contains(bad_name.err, "contains '/'"));
  auto missing = ptb::test::run_cli("export -o " + quote(bundle) + " --part x=" + quote(dir / "nope.pte"));
  CHECK(missing.exit_code == 3);
  auto stray_example = ptb::test::run_cli("export -o " + quote(bundle) + " --part x=a.pte --example y=a.npy:b.npy");
  CHECK(stray_example.exit_code == 2);
  CHECK(contains(stray_example.err, "--example y: no --part of that name"));
}

TEST_CASE("export: inspect and verify read the bundle it writes") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run_export(bundle, {part("encoder", fixture("cuda/sm80/model.pte")), aoti_part("mlp", "mlp_et")}).ok());
  auto inspect = ptb::test::run_cli("inspect " + quote(bundle));
  CHECK_MESSAGE(inspect.exit_code == 0, inspect.err);
  CHECK(contains(inspect.out, "Part encoder"));
  CHECK(contains(inspect.out, "Part mlp"));
  CHECK(contains(inspect.out, "data_name"));
  // The parts were built for different GPUs (sm_80 and sm_90a), so no single
  // GPU runs both: this checks integrity only; compatibility has its own tests.
  auto verify = ptb::test::run_cli("verify --gpu none " + quote(bundle));
  CHECK_MESSAGE(verify.exit_code == 0, (verify.out + verify.err));
  CHECK(contains(verify.out + verify.err, "0 failed"));
}

TEST_CASE("export: a part whose GEMMs and convolutions are Triton templates gets a note on compiling for cuBLAS/cuDNN") {
  // examples/ holds packages PyTorch compiled with ExecuTorch's Triton-only options.
  TempDir dir;
  const std::string ex = std::string(PTB_SOURCE_DIR) + "/examples/";
  auto result = ptb::test::run_cli("export -o " + quote(dir / "b") + " --json --part encoder=" + ex + "encoder.pt2" +
                                   " --example encoder=" + ex + "encoder.in0.npy:" + ex + "encoder.out0.npy");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const auto report = nlohmann::json::parse(result.out);
  std::string note;
  for (const auto& text : report["parts"][0]["notes"]) {
    if (text.get<std::string>().find("Triton templates") != std::string::npos) note = text.get<std::string>();
  }
  CHECK(note.find("encoder.pt2: the library runs its matrix products (1 kernel) and convolutions (2 kernels) as "
                  "Triton templates") != std::string::npos);
  CHECK(note.find("max_autotune_conv_backends=\"ATEN,TRITON\"") != std::string::npos);
  CHECK(note.find("link_libtorch=False still") != std::string::npos);
  // A part with no template kernels gets no such note.
  PTB_REQUIRE_FIXTURES();
  auto plain = ptb::test::run_cli("export -o " + quote(dir / "c") + " --json --part mlp=" + quote(fixture("aoti/mlp_et.pt2")) +
                                  " --example mlp=" + quote(fixture("aoti/mlp_et.in0.npy")) + ":" +
                                  quote(fixture("aoti/mlp_et.out0.npy")));
  REQUIRE_MESSAGE(plain.exit_code == 0, plain.err);
  CHECK(plain.out.find("Triton templates") == std::string::npos);
}

TEST_CASE("export: a .pt2 example that disagrees with the package's wrapper is refused, naming the input and both shapes") {
  // The example model in examples/ (ExecuTorch's CUDA options, its wrapper
  // source kept in the package): action_head takes features [1, 32] and
  // state [1, 8] and gives actions [1, 7].
  const fs::path examples = fs::path(PTB_SOURCE_DIR) / "examples";
  ptb::test::TempDir dir;
  auto npy = [&](const std::string& name) { return quote(examples / name); };
  const std::string part = " --part action_head=" + quote(examples / "action_head.pt2") + " --example action_head=";
  auto ok = ptb::test::run_cli("export -o " + quote(dir / "ok") + part + npy("action_head.in0.npy") + "," +
                               npy("action_head.in1.npy") + ":" + npy("action_head.out0.npy"));
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);

  auto swapped = ptb::test::run_cli("export -o " + quote(dir / "swapped") + part + npy("action_head.in1.npy") + "," +
                                    npy("action_head.in0.npy") + ":" + npy("action_head.out0.npy"));
  CHECK(swapped.exit_code == 1);
  CHECK_MESSAGE(contains(swapped.err, "--example action_head: input 0 ("), swapped.err);
  CHECK_MESSAGE(contains(swapped.err, "action_head.in1.npy) is float32 [1, 8]; "), swapped.err);
  CHECK_MESSAGE(contains(swapped.err, "wrapper source checks float32 [1, 32] there"), swapped.err);
  CHECK(!fs::exists(dir / "swapped" / "bundle.json"));

  auto missing = ptb::test::run_cli("export -o " + quote(dir / "missing") + part + npy("action_head.in0.npy") + ":" +
                                    npy("action_head.out0.npy"));
  CHECK(missing.exit_code == 1);
  CHECK_MESSAGE(contains(missing.err, "1 input file(s); "), missing.err);
  CHECK_MESSAGE(contains(missing.err, "wrapper takes 2 input(s)"), missing.err);

  auto wrong_output = ptb::test::run_cli("export -o " + quote(dir / "out") + " --part encoder=" +
                                         quote(examples / "encoder.pt2") + " --example encoder=" + npy("encoder.in0.npy") +
                                         ":" + npy("action_head.out0.npy"));
  CHECK(wrong_output.exit_code == 1);
  CHECK_MESSAGE(contains(wrong_output.err, "output 0 (action_head.out0.npy) is float32 [1, 7]; "), wrong_output.err);
  CHECK_MESSAGE(contains(wrong_output.err, "gives float32 [1, 32]"), wrong_output.err);
}
