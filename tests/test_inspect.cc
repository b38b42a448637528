// `ptbundle inspect` run as users run it, on every real file: concrete facts
// in the JSON (compared with ExecuTorch's own reading for the CUDA exports),
// the text layout, the published JSON Schema, exit codes and error lines.
#include <cstdlib>
#include <fstream>

#include "cli_child.h"
#include "ptbundle/base/sha256.h"

#include "fixture_dump.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/bundle/manifest.h"

using namespace ptb;
using namespace ptb::test;
using nlohmann::json;

using ptb::test::contains;

namespace {

json inspect_json(const std::string& args, int expected_exit = 0) {
  auto result = run_cli("inspect --json " + args);
  CHECK_MESSAGE(result.exit_code == expected_exit, result.err);
  return json::parse(result.out);
}

std::vector<std::string> strings(const json& array) { return array.get<std::vector<std::string>>(); }

// A bundle folder of `count` parts p0, p1, ..., each a copy of add.pte.
void bundle_of_parts(const fs::path& bundle, size_t count) {
  fs::create_directories(bundle);
  const std::string program = read_text(fixture("executorch/add.pte"));
  const std::string digest = to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(program.data()), program.size())));
  Manifest manifest;
  manifest.ptbundle_version = "0.1.0";
  manifest.created = "2026-05-01T12:34:56Z";
  for (size_t i = 0; i < count; ++i) {
    ManifestPart part;
    part.name = "p" + std::to_string(i);
    part.source = {"executorch", {"add.pte"}};
    part.files = {{FileRole::Program, part.name + ".pte", program.size(), digest}};
    std::ofstream(bundle / (part.name + ".pte"), std::ios::binary) << program;
    manifest.parts.push_back(std::move(part));
  }
  REQUIRE(write_manifest(bundle.string(), manifest).ok());
}


}  // namespace

TEST_CASE("inspect: the executorch programs, in one JSON document") {
  PTB_REQUIRE_FIXTURES();
  auto dir = fixture("executorch");
  json doc = inspect_json(quote(dir / "add.pte") + " " + quote(dir / "linear_no_constant_segment.pte") + " " +
                          quote(dir / "cadence_conv2d.pte") + " " + quote(dir / "softmax.pte"));
  CHECK(doc["ptbundle_inspect_version"] == 1);
  REQUIRE(doc["files"].size() == 4);
  const json& add = doc["files"][0];
  CHECK(add["path"] == (dir / "add.pte").string());
  CHECK(add["kind"] == "pte");
  CHECK(add["size"] == 728);
  CHECK(add["extended_header"].is_null());
  REQUIRE(add["methods"].size() == 1);
  CHECK(add["methods"][0]["name"] == "forward");
  CHECK(strings(add["methods"][0]["operators"]) == std::vector<std::string>{"aten::add.out"});
  CHECK(add["methods"][0]["inputs"].size() == 2);
  CHECK(add["methods"][0]["inputs"][0] ==
        json::parse(R"({"kind":"tensor","dtype":"float32","shape":[1],"dim_order":[0],"dynamism":"static"})"));
  CHECK(add["segments"].size() == 1);

  const json& linear = doc["files"][1];
  CHECK(linear["constants"] == json::parse(R"({"storage":"constant_buffer","segment_index":null,"count":2})"));
  CHECK(linear["segments"].empty());
  CHECK(strings(linear["methods"][0]["operators"]) == std::vector<std::string>{"aten::mul.out", "aten::add.out"});

  const json& cadence = doc["files"][2];
  CHECK(cadence["extended_header"]["segment_base_offset"] == 2432);
  CHECK(cadence["constants"] == json::parse(R"({"storage":"segment","segment_index":0,"count":2})"));
  REQUIRE(cadence["segments"].size() == 1);
  CHECK(cadence["segments"][0]["file_offset"] == 2432);
  CHECK(cadence["segments"][0]["alignment"] == 128);
  CHECK(strings(cadence["segments"][0]["used_by"]) == std::vector<std::string>{"constant"});
  CHECK(cadence["methods"][0]["outputs"][0]["shape"] == json::parse("[1, 64, 112, 112]"));

  CHECK(doc["files"][3]["methods"][0]["non_const_buffer_sizes"] == json::parse("[0, 65536]"));
}

TEST_CASE("inspect: every CUDA export agrees with ExecuTorch's reading, with --sha256") {
  PTB_REQUIRE_FIXTURES();
  for (const auto& dir : cuda_fixture_dirs()) {
    CAPTURE(dir.string());
    json dump = read_json(dir / "dump.json");
    auto pte_path = fixture("cuda") / dump["pte"]["file"].get<std::string>();
    auto ptd_path = fixture("cuda") / dump["ptd"]["file"].get<std::string>();
    json doc = inspect_json("--sha256 " + quote(pte_path) + " " + quote(ptd_path));
    REQUIRE(doc["files"].size() == 2);
    const json& pte = doc["files"][0];
    const json& program = dump["pte"]["program"];
    CHECK(pte["sha256"] == dump["pte"]["sha256"]);
    CHECK(pte["extended_header"]["program_size"] == dump["pte"]["extended_header"]["program_size"]);
    REQUIRE(pte["segments"].size() == program["segments"].size());
    for (size_t s = 0; s < program["segments"].size(); ++s) {
      const json& expected = program["segments"][s];
      const json& got = pte["segments"][s];
      CHECK(got["file_offset"] == expected["file_offset"]);
      CHECK(got["size"] == expected["size"]);
      CHECK(got["sha256"] == expected["sha256"]);
      CHECK(got["used_by"] == expected["used_by"]);
      CHECK(got["alignment"] == offset_alignment(expected["file_offset"].get<uint64_t>()));
    }
    REQUIRE(pte["named_data"].size() == program["named_data"].size());
    for (size_t n = 0; n < program["named_data"].size(); ++n) {
      CHECK(pte["named_data"][n]["key"] == program["named_data"][n]["key"]);
      CHECK(pte["named_data"][n]["size"] == program["named_data"][n]["size"]);
      CHECK(pte["named_data"][n]["sha256"] == program["named_data"][n]["sha256"]);
    }
    const json& plan = program["execution_plans"][0];
    const json& method = pte["methods"][0];
    CHECK(method["name"] == plan["name"]);
    REQUIRE(method["delegates"].size() == 1);
    const json& delegate = method["delegates"][0];
    const json& expected_delegate = plan["delegates"][0];
    CHECK(delegate["id"] == "CudaBackend");
    CHECK(delegate["payload_sha256"] == expected_delegate["payload_sha256"]);
    std::vector<std::string> spec_keys;
    for (const json& spec : delegate["compile_specs"]) {
      spec_keys.push_back(spec["key"]);
      CHECK(spec["value"] == expected_delegate["compile_specs"][spec["key"].get<std::string>()]);
    }
    CHECK(spec_keys == strings(expected_delegate["compile_spec_order"]));
    const json& cuda = delegate["cuda"];
    const json& metadata = expected_delegate["cuda_aoti_metadata"];
    CHECK(cuda["form"] == "multi_variant");
    REQUIRE(cuda["variants"].size() == metadata["variants"].size());
    for (size_t v = 0; v < metadata["variants"].size(); ++v) {
      const json& got = cuda["variants"][v];
      const json& expected = metadata["variants"][v];
      CHECK(got["target_sm"] == expected["target_sm"]);
      CHECK(got["ptx_compute"] == expected["ptx_compute"]);
      CHECK(got["fallback_only"] == expected["fallback_only"]);
      CHECK(got["library_key"] == expected["so_blob_key"]);
      CHECK(got["library_in_program"] == expected["so_blob_in_pte"]);
      CHECK(got["library_size"] == expected["so_blob_size"]);
      // The library's GPU code, found by libcuda: a native variant carries a
      // cubin for its own SM, the fallback PTX for its compute target.
      REQUIRE(got.contains("kernels"));
      std::string want = expected["fallback_only"].get<bool>() || expected["ptx_compute"] != 0
                             ? "compute_" + std::to_string(expected["ptx_compute"].get<int>())
                             : "sm_" + std::to_string(expected["target_sm"].get<int>());
      bool found = false;
      for (const json& kernel : got["kernels"]) found = found || kernel["target"] == want;
      CHECK_MESSAGE(found, want);
    }
    REQUIRE(cuda["weights"].size() == metadata["weights"].size());
    for (size_t w = 0; w < metadata["weights"].size(); ++w) {
      CHECK(cuda["weights"][w]["storage_key"] == metadata["weights"][w]["storage_key"]);
      CHECK(cuda["weights"][w]["sizes"] == metadata["weights"][w]["sizes"]);
      CHECK(cuda["weights"][w]["dtype"] == "float32");
    }

    const json& ptd = doc["files"][1];
    CHECK(ptd["kind"] == "ptd");
    CHECK(ptd["sha256"] == dump["ptd"]["sha256"]);
    CHECK(ptd["header"]["segment_base_offset"] == dump["ptd"]["header"]["segment_base_offset"]);
    REQUIRE(ptd["named_data"].size() == dump["ptd"]["named_data"].size());
    for (size_t n = 0; n < ptd["named_data"].size(); ++n) {
      CHECK(ptd["named_data"][n]["key"] == dump["ptd"]["named_data"][n]["key"]);
      CHECK(ptd["named_data"][n]["size"] == dump["ptd"]["named_data"][n]["size"]);
      CHECK(ptd["named_data"][n]["sha256"] == dump["ptd"]["named_data"][n]["sha256"]);
      CHECK(ptd["named_data"][n]["tensor_layout"].is_null());
    }
  }
}

TEST_CASE("inspect: the bundled program's test cases") {
  PTB_REQUIRE_FIXTURES();
  json doc = inspect_json(quote(fixture("executorch/bundled_program.bpte")));
  const json& bpte = doc["files"][0];
  CHECK(bpte["kind"] == "bpte");
  CHECK(bpte["version"] == 2);
  CHECK(bpte["program"]["size"] == 1696);
  CHECK(bpte["program"]["extended_header"]["length"] == 24);
  // Segment offsets are of the .bpte, not of the program inside it.
  CHECK(bpte["program"]["segments"][0]["file_offset"] ==
        bpte["program"]["offset"].get<uint64_t>() + 1664);
  REQUIRE(bpte["test_suites"].size() == 1);
  CHECK(bpte["test_suites"][0]["method"] == "forward");
  REQUIRE(bpte["test_suites"][0]["test_cases"].size() == 10);
  const json& first = bpte["test_suites"][0]["test_cases"][0];
  CHECK(first["inputs"].size() == 2);
  CHECK(first["expected_outputs"][0] ==
        json::parse(R"({"kind":"tensor","dtype":"int32","shape":[2,2],"dim_order":[0,1],"size":16})"));
}

TEST_CASE("inspect: AOTInductor packages show their models, metadata and kernels") {
  PTB_REQUIRE_FIXTURES();
  auto dir = fixture("aoti");
  json doc = inspect_json(quote(dir / "mlp_sm90.pt2") + " " + quote(dir / "mlp_et.pt2") + " " + quote(dir / "mlp_et_ptx.pt2"));
  REQUIRE(doc["files"].size() == 3);
  for (const json& package : doc["files"]) {
    CHECK(package["kind"] == "pt2");
    CHECK(package["archive_format"] == "pt2");
    REQUIRE(package["models"].size() == 1);
    const json& model = package["models"][0];
    CHECK(model["name"] == "model");
    CHECK(model["compute_capability"] == "90");
    CHECK(model["device"] == "cuda");
    CHECK(model["metadata"]["AOTI_PLATFORM"] == "linux");
  }
  const json& sm90 = doc["files"][0]["models"][0];
  CHECK(doc["files"][0]["root"] == "mlp/");
  CHECK(sm90["weights_in_library"] == true);
  CHECK(sm90["weights_blob"].is_null());
  REQUIRE(sm90["kernel_files"].size() == 2);
  for (const json& file : sm90["kernel_files"]) {
    REQUIRE(file["kernels"].size() == 1);
    CHECK(file["kernels"][0]["target"] == "sm_90a");
    CHECK(file["kernels"][0]["kind"] == "cubin");
  }
  const json& et = doc["files"][1]["models"][0];
  CHECK(et["weights_in_library"] == false);
  CHECK(et["weights_blob"]["size"] == 3200);
  CHECK(et["kernel_files"].empty());
  // Kernels embedded in the library's read-only data.
  REQUIRE(et["wrapper_library"].contains("kernels"));
  CHECK(et["wrapper_library"]["kernels"].size() == 2);
  for (const json& kernel : et["wrapper_library"]["kernels"]) CHECK(kernel["target"] == "sm_90a");
  bool ptx = false;
  for (const json& kernel : doc["files"][2]["models"][0]["wrapper_library"]["kernels"]) {
    ptx = ptx || (kernel["kind"] == "ptx" && kernel["target"] == "compute_90a");
  }
  CHECK(ptx);
  // What runs the library: these packages link LibTorch.
  CHECK(strings(et["wrapper_library"]["runtime"]["libtorch"]) ==
        std::vector<std::string>{"libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so"});
}

TEST_CASE("inspect: a library's runtime needs: LibTorch, or the built-in runtime's compute functions by family") {
  PTB_REQUIRE_FIXTURES();
  // ExecuTorch's CUDA export: link_libtorch=False, every GEMM in Triton.
  json doc = inspect_json(quote(fixture("cuda/sm90/model.pte")));
  const std::string text = doc.dump();
  CHECK(contains(text, R"("runtime":{"calls":[],"dynamic_dims":[],"lacks":[],"libtorch":[],"needs":"built-in"})"));  // keys sorted by json
  auto plain = run_cli("inspect " + quote(fixture("cuda/sm90/model.pte")));
  CHECK(contains(plain.out, "Runtime: built-in, tensor bookkeeping only"));
  auto linked = run_cli("inspect " + quote(fixture("aoti/mlp_et.pt2")));
  CHECK(contains(linked.out, "Runtime: LibTorch (linked to libtorch.so, libtorch_cpu.so, libtorch_cuda.so; compiled with "
                                 "aot_inductor.link_libtorch=True)"));
}

TEST_CASE("inspect: a bundle folder shows its manifest and each part's files") {
  PTB_REQUIRE_FIXTURES();
  TempDir bundle;
  fs::copy_file(fixture("cuda/sm80/model.pte"), bundle / "sm80.pte");
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), bundle / "sm80.ptd");
  Manifest manifest;
  manifest.ptbundle_version = "0.1.0";
  manifest.created = "2026-05-01T12:34:56Z";
  ManifestPart part;
  part.name = "sm80";
  part.source = {"executorch", {"model.pte", "aoti_cuda_blob.ptd"}};
  part.files = {{FileRole::Program, "sm80.pte", 28888, "b9b4fb1d3539fb39aa8200d956152878483bfdecf2bf186f5541b9e54af93f0b"},
                {FileRole::Data, "sm80.ptd", 8832, std::string(64, '0')}};
  part.data_name = "sm80";
  manifest.parts.push_back(part);
  REQUIRE(write_manifest(bundle.path().string(), manifest).ok());

  json doc = inspect_json("--sha256 " + quote(bundle.path()));
  const json& folder = doc["files"][0];
  CHECK(folder["kind"] == "bundle");
  CHECK(folder["manifest"]["parts"][0]["name"] == "sm80");
  REQUIRE(folder["parts"].size() == 1);
  const json& files = folder["parts"][0]["files"];
  REQUIRE(files.size() == 2);
  CHECK(files[0]["role"] == "program");
  CHECK(files[0]["size_matches"] == true);
  CHECK(files[0]["sha256_matches"] == true);
  CHECK(files[0]["file"]["kind"] == "pte");
  CHECK(files[0]["file"]["methods"][0]["delegates"][0]["id"] == "CudaBackend");
  CHECK(files[1]["file"]["kind"] == "ptd");
  // The manifest's digest of the data file is wrong on purpose.
  CHECK(files[1]["sha256_matches"] == false);

  auto text = run_cli("inspect " + quote(bundle.path()));
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, "Part sm80"));
  CHECK(contains(text.out, "program sm80.pte: size matches the manifest"));
}

TEST_CASE("inspect: a bundle of thousands of parts is printed part by part, in memory that does not grow with them") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  constexpr size_t kFew = 200, kMany = 4000;
  bundle_of_parts(dir / "few", kFew);
  bundle_of_parts(dir / "many", kMany);
  for (const char* format : {"--json", ""}) {
    CAPTURE(format);
    std::vector<std::string> args{"inspect", (dir / "few").string()};
    if (*format) args.push_back(format);
    auto few = run_child(args);
    args[1] = (dir / "many").string();
    auto many = run_child(args);
    REQUIRE_MESSAGE(few.exit_code == 0, few.err);
    REQUIRE_MESSAGE(many.exit_code == 0, many.err);
    if (*format) {
      // Laid out as the whole document's dump would be, and the manifest as read.
      CHECK(few.out == nlohmann::ordered_json::parse(few.out).dump(2) + "\n");
      CHECK(json::parse(few.out)["files"][0]["manifest"] == json::parse(read_text(dir / "few" / "bundle.json")));
      json doc = json::parse(many.out);
      CHECK(doc["files"][0]["parts"].size() == kMany);
      CHECK(doc["files"][0]["manifest"]["parts"].size() == kMany);
      CHECK(doc["files"][0]["parts"][kMany - 1]["name"] == "p" + std::to_string(kMany - 1));
      CHECK(doc["exit_code"] == 0);
    } else {
      CHECK(contains(many.out, "\nPart p" + std::to_string(kMany - 1) + "\n"));
      CHECK(contains(many.out, "Signature: none"));
    }
    // Printed as inspected, a part costs what reading bundle.json's entry
    // for it costs, not its whole report and document held until the end
    // (several times that).
    const long per_part_kib = (many.peak_rss_kib - few.peak_rss_kib) / static_cast<long>(kMany - kFew);
    CAPTURE(few.peak_rss_kib);
    CAPTURE(many.peak_rss_kib);
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer's quarantine keeps freed blocks (up to 256 MiB) and
    // adds shadow memory: peak RSS measures the sanitizer, not the printer.
    MESSAGE("[inspect] " << per_part_kib << " KiB per part under AddressSanitizer (bounded in the normal build)");
#else
    CHECK(per_part_kib < 12);
#endif
  }
}

TEST_CASE("inspect: a bundle refused after some of its parts were printed is still one JSON document, naming the part") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  bundle_of_parts(dir / "b", 50);
  std::filesystem::resize_file(dir / "b" / "p30.pte", 100);
  auto result = run_cli("inspect --json " + quote(dir / "b"));
  CHECK(result.exit_code == 1);
  CHECK(contains(result.err, "p30.pte"));
  json doc = json::parse(result.out);
  const json& folder = doc["files"][0];
  CHECK(folder["parts"].size() == 30);
  CHECK(contains(folder["error"]["message"], "p30.pte"));
  CHECK_FALSE(folder.contains("signature"));
  CHECK(doc["exit_code"] == 1);
  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") == 0)
    CHECK(ptb::test::schema_problem("inspect", result.out) == "");

  auto text = run_cli("inspect " + quote(dir / "b"));
  CHECK(text.exit_code == 1);
  CHECK(contains(text.out, "Part p29\n"));
  CHECK_FALSE(contains(text.out, "Part p30\n"));
  CHECK(contains(text.err, "p30.pte"));
}

TEST_CASE("inspect: text output is aligned and names what matters") {
  PTB_REQUIRE_FIXTURES();
  auto result = run_cli("inspect " + quote(fixture("cuda/sm80/model.pte")) + " " + quote(fixture("cuda/sm80/aoti_cuda_blob.ptd")));
  REQUIRE(result.exit_code == 0);
  CHECK(result.err.empty());
  const std::string& out = result.out;
  CHECK(contains(out, "Format: ExecuTorch program (.pte), 28.2 KiB (28888 bytes)\n"));
  CHECK(contains(out, "Extended header: eh00, length 32, program 1.6 KiB (1672 bytes), segments at 1792 (26.5 KiB)\n"));
  CHECK(contains(out, "Method forward\n"));
  CHECK(contains(out, "    0  tensor  float32  [4, 32]  [0, 1]     static\n"));
  CHECK(contains(out, "  Delegate 0: CudaBackend, segment 1, 312 B\n"));
  CHECK(contains(out, "      cuda_include_ptx  OFF\n"));
  CHECK(contains(out, "sm_80, no PTX: 52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3_so_blob (26.1 KiB)\n"));
  CHECK(contains(out, "        layer.weight  float32  [64, 32]  [32, 1]       0  8.0 KiB  cuda    cuda_fqn_weight:cuda:layer.weight\n"));
  CHECK(contains(out, "  #  file offset      size  align  used by\n"));
  CHECK(contains(out, "  2         2176  26.1 KiB    128  named_data:"));
  CHECK(contains(out, "Format: ExecuTorch data (.ptd), 8.6 KiB (8832 bytes)\n"));
  CHECK(contains(out, "  cuda_fqn_weight:cuda:layer.bias          1         8576    256 B    128  -\n"));
  // No line ends in blanks.
  CHECK_FALSE(contains(out, " \n"));
}

TEST_CASE("inspect: --json output follows schemas/inspect.schema.json") {
  PTB_REQUIRE_FIXTURES();
  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
    skip("python3 with the jsonschema module is not installed");
    return;
  }
  std::string inputs;
  for (const char* name : {"executorch/add.pte", "executorch/add_extended_header.pte", "executorch/linear_no_constant_segment.pte",
                           "executorch/bundled_program.bpte", "cuda/merged_reference/model.pte",
                           "cuda/ptx_fallback/aoti_cuda_blob.ptd", "aoti/mlp_et_ptx.pt2", "aoti/mlp_sm90.pt2"}) {
    inputs += " " + quote(fixture(name));
  }
  for (const char* flags : {"", "--sha256"}) {
    auto result = run_cli(std::string("inspect --json ") + flags + inputs + " /nonexistent/x.pte");
    CHECK(result.exit_code == 3);
    CHECK(ptb::test::schema_problem("inspect", result.out) == "");
  }
}

TEST_CASE("inspect: exit codes and error lines") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto truncated = dir / "cut.pte";
  std::string bytes = read_text(fixture("cuda/sm80/model.pte"));
  REQUIRE(write_file_atomically(truncated.string(), bytes.substr(0, 1000)).ok());

  auto bad = run_cli("inspect " + quote(truncated));
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.empty());
  CHECK(bad.err == "ptbundle: error: " + truncated.string() +
                       ": extended header program_size 1672 does not fit the file; expected between 40 and 1000 (the "
                       "file size)\n");

  // Every path is reported; the good one still prints, the exit code is the first failure's.
  json doc = inspect_json(quote(fixture("executorch/add.pte")) + " " + quote(truncated) + " /nonexistent/y.ptd", 1);
  REQUIRE(doc["files"].size() == 3);
  CHECK(doc["files"][0]["kind"] == "pte");
  CHECK(doc["files"][1]["error"]["kind"] == "invalid");
  CHECK(doc["files"][1]["error"]["exit_code"] == 1);
  CHECK(doc["files"][2]["error"]["kind"] == "io");
  CHECK(doc["files"][2]["error"]["exit_code"] == 3);
  CHECK(contains(doc["files"][2]["error"]["message"], "/nonexistent/y.ptd: cannot open"));

  CHECK(run_cli("inspect /nonexistent/z.pte").exit_code == 3);
  auto folder = run_cli("inspect " + quote(dir.path()));
  CHECK(folder.exit_code == 1);
  CHECK(contains(folder.err, "folder without bundle.json"));
  auto text = dir / "notes.txt";
  REQUIRE(write_file_atomically(text.string(), std::string("hello world")).ok());
  auto unknown = run_cli("inspect " + quote(text));
  CHECK(unknown.exit_code == 1);
  CHECK(contains(unknown.err, "not a .pte, .ptd, .bpte or .pt2 file"));
  CHECK(run_cli("inspect").exit_code == 2);
  CHECK(run_cli("inspect --no-such-flag " + quote(fixture("executorch/add.pte"))).exit_code == 2);
}

TEST_CASE("inspect: alignment of a file offset") {
  CHECK(offset_alignment(0) == 4096);
  CHECK(offset_alignment(1792) == 256);
  CHECK(offset_alignment(2176) == 128);
  CHECK(offset_alignment(8576) == 128);
  CHECK(offset_alignment(3) == 1);
  CHECK(offset_alignment(1ull << 40) == 4096);
}

TEST_CASE("inspect --sha256: one read of a data file gives the file's digest and each blob's") {
  // A large blob is hashed by a second thread from the buffers the file's
  // digest is read through; each digest must equal one computed on its own.
  TempDir dir;
  std::vector<uint8_t> large(20u << 20), small(1000);
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<uint8_t>((i * 2654435761u) >> 11);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<uint8_t>(i * 7);
  PtdContents contents;
  contents.add("large", SegmentSource::memory(Bytes(large.data(), large.size())));
  contents.add("small", SegmentSource::memory(Bytes(small.data(), small.size())));
  const std::string path = (dir / "w.ptd").string();
  REQUIRE(write_ptd_file(path, contents).ok());
  InspectOptions options;
  options.sha256 = true;
  auto inspected = inspect_path(path, options);
  REQUIRE_MESSAGE(inspected.ok(), inspected.error().message);
  CHECK(inspected->sha256 == sha256_file(path).value());
  const auto& data = std::get<InspectDataFile>(inspected->body);
  REQUIRE(data.named_data.size() == 2);
  CHECK(data.named_data[0].sha256 == to_hex(sha256(Bytes(large.data(), large.size()))));
  CHECK(data.named_data[1].sha256 == to_hex(sha256(Bytes(small.data(), small.size()))));
}
