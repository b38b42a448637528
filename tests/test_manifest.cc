#include <cstdlib>
#include <fstream>

#include "ptbundle/bundle/manifest.h"
#include "support.h"
#include "ptbundle/bundle/manifest_json.h"

using namespace ptb;
using ptb::test::TempDir;

using ptb::test::contains;

namespace {

const std::string kHash = std::string(64, 'a');

Manifest sample() {
  Manifest m;
  m.ptbundle_version = "0.1.0";
  m.created = "2026-05-01T12:34:56Z";
  ManifestPart part;
  part.name = "encoder";
  part.source = {"executorch", {"model.pte", "aoti_cuda_blob.ptd"}};
  part.files = {{FileRole::Program, "encoder.pte", 28888, kHash},
                {FileRole::Data, "encoder.ptd", 8832, std::string(64, 'b')},
                {FileRole::Testcase, "testcases/encoder.ptd", 900, std::string(64, 'c')}};
  part.data_name = "encoder";
  ManifestMethod method;
  method.name = "forward";
  method.inputs = {{"tensor", "float32", {4, 32}, "static"}};
  method.outputs = {{"tensor", "float32", {4, 64}, "static"}, {"int", "", {}, ""}};
  method.delegates = {{"CudaBackend", std::string("encoder")}};
  part.methods = {method};
  part.cuda = CudaInfo{{{"sm_80", 80, "cubin"}, {"compute_75", 75, "ptx"}}, BuildGpu{std::nullopt, std::string("9.0"), std::nullopt}};
  part.testcase = ManifestTestcase{"testcases/encoder.ptd", 1e-5, 1e-4, 1, 1, {}};
  m.parts.push_back(part);
  ManifestPart head;
  head.name = "head";
  head.source = {"aoti_package", {"mlp_et.pt2"}};
  head.files = {{FileRole::Program, "head.pte", 10, kHash}};
  m.parts.push_back(head);
  return m;
}

// The error message of reading `json`, or "" if it is accepted.
std::string refusal(const Json& json) {
  auto result = manifest_from_json(json, "b/bundle.json");
  return result.ok() ? std::string() : result.error().message;
}


}  // namespace

TEST_CASE("manifest: written and read back field for field, keys in a stable order") {
  Manifest m = sample();
  Json json = manifest_to_json(m);
  std::string text = json.dump(2);
  CHECK(text.find("\"format\"") < text.find("\"format_version\""));
  CHECK(text.find("\"format_version\"") < text.find("\"parts\""));
  auto back = parse_manifest(text, "bundle.json");
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(manifest_to_json(*back) == json);
  const auto* part = back->find_part("encoder");
  REQUIRE(part != nullptr);
  CHECK(part->files.size() == 3);
  CHECK(part->find_file(FileRole::Data)->size == 8832);
  CHECK(part->methods[0].inputs[0].shape == std::vector<int64_t>{4, 32});
  CHECK(part->methods[0].outputs[1].kind == "int");
  CHECK(part->cuda->kernel_targets[1].kind == "ptx");
  CHECK(part->cuda->built_on->compute_capability == "9.0");
  CHECK_FALSE(part->cuda->built_on->name.has_value());
  CHECK(part->testcase->rtol == doctest::Approx(1e-4));
  CHECK(back->find_part("head")->testcase == std::nullopt);
  CHECK(back->find_part("Head") == nullptr);
}

TEST_CASE("manifest: written atomically into the bundle folder") {
  TempDir dir;
  REQUIRE(write_manifest(dir.path().string(), sample()).ok());
  auto back = read_manifest(dir.path().string());
  REQUIRE(back.ok());
  CHECK(back->parts.size() == 2);
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 1);  // bundle.json, no temporary file left
  CHECK(utc_now_iso8601().size() == 20);
  auto missing = read_manifest((dir / "nope").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::Io);
}

TEST_CASE("manifest: a hand-edited manifest cannot point outside the bundle") {
  Json good = manifest_to_json(sample());
  REQUIRE(refusal(good).empty());

  Json j = good;
  j["parts"][0]["files"][0]["path"] = "../../etc/passwd";
  CHECK(contains(refusal(j), "b/bundle.json: parts[0].files[0].path: is \"../../etc/passwd\"; expected \"encoder.pte\""));
  j = good;
  j["parts"][0]["files"][1]["path"] = "/tmp/encoder.ptd";
  CHECK(contains(refusal(j), "expected \"encoder.ptd\""));
  j = good;
  j["parts"][0]["name"] = "../encoder";
  CHECK(contains(refusal(j), "parts[0].name: part name \"../encoder\" contains '/'"));
  j = good;
  j["parts"][0]["name"] = "nul";
  CHECK(contains(refusal(j), "Windows device name"));
  j = good;
  j["parts"][0]["data_name"] = "other";
  CHECK(contains(refusal(j), "parts[0].data_name: expected \"encoder\""));
  j = good;
  j["parts"][0]["methods"][0]["delegates"][0]["data_name"] = "../x";
  CHECK(contains(refusal(j), "delegates[0].data_name: part name \"../x\" contains '/'"));
  j = good;
  j["parts"][0]["methods"][0]["delegates"][0]["data_name"] = "head";
  CHECK(contains(refusal(j), "is \"head\"; expected \"encoder\", the part's name"));
  j = good;
  j["parts"][0]["testcase"]["path"] = "testcases/../../x.ptd";
  CHECK(contains(refusal(j), "parts[0].testcase.path"));
  j = good;
  j["parts"][1]["name"] = "Encoder";
  j["parts"][1]["files"][0]["path"] = "Encoder.pte";
  CHECK(contains(refusal(j), "\"encoder\" and \"Encoder\" differ only in case"));
  // Found by scripts/fuzz: a control byte in a name stays escaped, so the error stays one line.
  j = good;
  j["parts"][0]["name"] = "\ncoder";
  CHECK(contains(refusal(j), "parts[0].name: part name \"\\x0acoder\" contains byte 0x0a at position 0"));
  CHECK(refusal(j).find('\n') == std::string::npos);
}

TEST_CASE("manifest: every field is type-checked") {
  Json good = manifest_to_json(sample());
  Json j = good;
  j["format_version"] = 2;
  CHECK(contains(refusal(j), "format_version: 2 is not supported; expected 1 (written by a newer ptbundle)"));
  j = good;
  j["format_version"] = "1";
  CHECK(contains(refusal(j), "format_version: is a string; expected an integer >= 0"));
  j = good;
  j["surprise"] = true;
  CHECK(contains(refusal(j), "top level: has the unknown key \"surprise\""));
  j = good;
  j["created"] = "yesterday";
  CHECK(contains(refusal(j), "created: is \"yesterday\"; expected a UTC time"));
  j = good;
  j["parts"][0]["files"][0]["sha256"] = std::string(64, 'A');
  CHECK(contains(refusal(j), "files[0].sha256: expected 64 lowercase hexadecimal digits"));
  j = good;
  j["parts"][0]["files"][0]["size"] = -1;
  CHECK(contains(refusal(j), "files[0].size: is a number; expected an integer >= 0"));
  j = good;
  j["parts"][0]["files"].erase(0);
  CHECK(contains(refusal(j), "parts[0].files: has no program file"));
  j = good;
  j["parts"][0]["files"].push_back(good["parts"][0]["files"][1]);
  CHECK(contains(refusal(j), "parts[0].files[3]: is a second data file"));
  j = good;
  j["parts"][0]["methods"][0]["inputs"][0]["dtype"] = "float33";
  CHECK(contains(refusal(j), "inputs[0].dtype: \"float33\" is not a dtype"));
  j = good;
  j["parts"][0]["methods"][0]["inputs"][0]["shape"] = Json::array({4, -1});
  CHECK(contains(refusal(j), "inputs[0].shape[1]: expected an integer >= 0"));
  j = good;
  j["parts"][0]["cuda"]["kernel_targets"][0]["kind"] = "sass";
  CHECK(contains(refusal(j), "kernel_targets[0].kind: is \"sass\""));
  j = good;
  j["parts"][0]["testcase"]["atol"] = -1;
  CHECK(contains(refusal(j), "testcase.atol: is negative"));
  j = good;
  j["parts"][0]["testcase"] = nullptr;
  CHECK(contains(refusal(j), "parts[0].testcase: is null but the part lists a testcase file"));
  j = good;
  j["parts"][0]["testcase"]["output_checks"] = Json::array({{{"atol", 1e-3}, {"rtol", 0}, {"rule", "x"}}, {{"atol", 1}, {"rtol", 0}, {"rule", "y"}}});
  CHECK(contains(refusal(j), "testcase.output_checks: has 2 entries; expected one per output (1)"));
  j["parts"][0]["testcase"]["output_checks"] = Json::array({{{"atol", -1}, {"rtol", 0}, {"rule", "x"}}});
  CHECK(contains(refusal(j), "output_checks[0].atol: is negative"));
  j["parts"][0]["testcase"]["output_checks"] = Json::array({{{"atol", 1}, {"rtol", 0}}});
  CHECK(contains(refusal(j), "output_checks[0]: lacks the key \"rule\""));
  j = good;
  j["parts"][1]["source"]["kind"] = "onnx";
  CHECK(contains(refusal(j), "parts[1].source.kind: is \"onnx\""));
  CHECK(contains(parse_manifest("{not json", "x/bundle.json").error().message, "x/bundle.json: not valid JSON"));
}

TEST_CASE("manifest: what we write passes the published JSON Schema") {
  std::string schema = std::string(PTB_SOURCE_DIR) + "/schemas/bundle.schema.json";
  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0)
    return ptb::test::skip("python3 with jsonschema not found: the schema check needs it");
  TempDir dir;
  auto validate = [&](const Json& json) {
    auto path = dir / "m.json";
    std::ofstream(path) << json.dump();
    std::string command = "python3 -c 'import json,sys,jsonschema; s=json.load(open(sys.argv[1])); "
                          "jsonschema.Draft202012Validator.check_schema(s); "
                          "jsonschema.Draft202012Validator(s).validate(json.load(open(sys.argv[2])))' " +
                          ptb::test::quote(schema) + " " + ptb::test::quote(path) + " >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  };
  Json good = manifest_to_json(sample());
  CHECK(validate(good));
  Json bad = good;
  bad["parts"][0]["name"] = "con.txt";
  CHECK_FALSE(validate(bad));
  bad = good;
  bad["parts"][0]["name"] = "x.PTD";
  CHECK_FALSE(validate(bad));
  bad = good;
  bad["parts"][0]["methods"][0]["outputs"][1]["dtype"] = "float32";  // a non-tensor with a dtype
  CHECK_FALSE(validate(bad));
}
