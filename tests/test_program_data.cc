// One PROGRAM[,DATA] rule, one data-file rule and one named-data order for
// every command: the same argument and the same lone .pte resolve to the same
// data in export, merge, verify, inspect and run (they once split the argument
// at different commas and looked for a lone program's data file three ways).
#include <set>

#include "ptbundle/base/sha256.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/export/export.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/merge/merge.h"
#include "ptbundle/program/program_argument.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/program/program_with_data.h"
#include "support.h"

using namespace ptb;
using namespace ptb::test;

namespace {

std::string file_sha(const fs::path& path) {
  auto digest = sha256_file(path.string());
  REQUIRE(digest.ok());
  return *digest;
}

// The data file verify settled on for the one program of `argument`.
std::string verify_data(const std::string& argument) {
  CheckList checks;
  std::vector<VerifySubject> subjects = check_integrity(argument, checks);
  REQUIRE(subjects.size() == 1);
  REQUIRE(subjects[0].program);
  return subjects[0].program->ptd() ? subjects[0].program->ptd()->path() : "";
}

// The file run takes the weights from.
std::string run_data(const std::string& argument) {
  auto part = open_run_part(argument, RunPartOptions{});
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  return part->weights.file;
}

// The data file export copies into the bundle, by its SHA-256.
std::string export_data_sha(const fs::path& bundle, const std::string& argument) {
  auto request = parse_part_argument("enc=" + argument);
  REQUIRE_MESSAGE(request.ok(), request.error().message);
  ExportOptions options;
  options.output_dir = bundle.string();
  options.parts = {*request};
  options.tool_version = "test";
  auto report = export_parts(options);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  return file_sha(bundle / "enc.ptd");
}

}  // namespace

TEST_CASE("program argument: only the first comma after a program's extension splits") {
  auto plain = parse_program_argument("out/model.pte");
  REQUIRE(plain.ok());
  CHECK(plain->program == "out/model.pte");
  CHECK_FALSE(plain->data.has_value());

  auto commas = parse_program_argument("a,b/model.pte,c,d/weights.ptd");
  REQUIRE(commas.ok());
  CHECK(commas->program == "a,b/model.pte");
  CHECK(commas->data == "c,d/weights.ptd");

  auto bundled = parse_program_argument("tests.bpte,w.ptd");
  REQUIRE(bundled.ok());
  CHECK(bundled->program == "tests.bpte");
  CHECK(bundled->data == "w.ptd");

  // A package splits too, so that a command can say it takes no data file.
  auto package = parse_program_argument("model.pt2,w.ptd");
  REQUIRE(package.ok());
  CHECK(package->program == "model.pt2");

  auto folder = parse_program_argument("bundles/a,b");
  REQUIRE(folder.ok());
  CHECK(folder->program == "bundles/a,b");
  CHECK_FALSE(folder->data.has_value());

  CHECK(parse_program_argument("").error().kind == ErrorKind::Usage);
  CHECK(parse_program_argument(",w.ptd").error().kind == ErrorKind::Usage);
  CHECK(parse_program_argument("model.pte,").error().kind == ErrorKind::Usage);

  // merge and export split with the same rule.
  auto source = parse_merge_source("a,b/model.pte,c,d/weights.ptd");
  REQUIRE(source.ok());
  CHECK(source->pte_path == "a,b/model.pte");
  CHECK(source->ptd_path == "c,d/weights.ptd");
  auto part = parse_part_argument("enc=a,b/model.pte,c,d/weights.ptd");
  REQUIRE(part.ok());
  CHECK(part->program == "a,b/model.pte");
  CHECK(part->data_file == "c,d/weights.ptd");
}

TEST_CASE("program argument: PROGRAM,DATA with commas opens the same data in export, merge, verify and run") {
  PTB_REQUIRE_FIXTURES();
  // sm80's program with sm86's data file (the same keys and sizes, other
  // bytes), both in folders with commas, and sm80's own data beside the
  // program: every command must take the file after the comma.
  TempDir dir;
  fs::create_directories(dir / "p,1");
  fs::create_directories(dir / "d,2");
  fs::copy_file(fixture("cuda/sm80/model.pte"), dir / "p,1" / "model.pte");
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), dir / "p,1" / "aoti_cuda_blob.ptd");
  const fs::path data = dir / "d,2" / "w,eights.ptd";
  fs::copy_file(fixture("cuda/bad_weights_sm86/aoti_cuda_blob.ptd"), data);
  const std::string argument = (dir / "p,1" / "model.pte").string() + "," + data.string();

  CHECK(verify_data(argument) == data.string());
  CHECK(run_data(argument) == data.string());
  CHECK(export_data_sha(dir / "bundle", argument) == file_sha(data));
  auto source = parse_merge_source(argument);
  REQUIRE(source.ok());
  CHECK(source->ptd_path == data.string());
  // merge reads its weights from that file: sm80 with sm86's weights against
  // sm90 with its own (equal to sm80's) is refused as different weights.
  MergeRequest request;
  request.inputs = {*source, {fixture("cuda/sm90/model.pte").string(), fixture("cuda/sm90/aoti_cuda_blob.ptd").string()}};
  request.output_pte = (dir / "merged.pte").string();
  request.output_ptd = (dir / "merged.ptd").string();
  auto merged = merge_programs(request);
  REQUIRE_FALSE(merged.ok());
  INFO(merged.error().message);
  CHECK(merged.error().message.find(data.string()) != std::string::npos);
}

TEST_CASE("program data: a lone .pte finds the same data file in export, verify and run") {
  PTB_REQUIRE_FIXTURES();
  // named_sm90's delegates say data_name=encoder; beside it lie encoder.ptd
  // (its data) and an aoti_cuda_blob.ptd of another export. export once took
  // aoti_cuda_blob.ptd (or the only .ptd), verify and run <data_name>.ptd.
  TempDir dir;
  fs::copy_file(fixture("cuda/named_sm90/model.pte"), dir / "model.pte");
  fs::copy_file(fixture("cuda/named_sm90/encoder.ptd"), dir / "encoder.ptd");
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), dir / "aoti_cuda_blob.ptd");
  const std::string program = (dir / "model.pte").string();
  const std::string expected = (dir / "encoder.ptd").string();

  auto pte = PteFile::open(program);
  REQUIRE(pte.ok());
  const ProgramWithData described(std::make_shared<const PteFile>(std::move(*pte)), nullptr);
  CHECK(data_file_candidates(program, described.methods()) ==
        std::vector<std::string>{(dir / "model.ptd").string(), expected, (dir / "aoti_cuda_blob.ptd").string()});
  CHECK(find_data_file_beside(program, described.methods()) == expected);

  auto opened = ProgramWithData::open(program, std::nullopt);
  REQUIRE_MESSAGE(opened.ok(), opened.error().message);
  REQUIRE(opened->ptd() != nullptr);
  CHECK(opened->ptd()->path() == expected);

  CHECK(verify_data(program) == expected);
  CHECK(run_data(program) == expected);
  CHECK(export_data_sha(dir / "bundle", program) == file_sha(expected));

  // <stem>.ptd comes first: a bundle part's own name.
  fs::copy_file(expected, dir / "model.ptd");
  CHECK(verify_data(program) == (dir / "model.ptd").string());
  CHECK(run_data(program) == (dir / "model.ptd").string());
}

TEST_CASE("program data: a key is looked up in the data file first, then in the program, as ExecuTorch's runtime does") {
  PTB_REQUIRE_FIXTURES();
  auto program = ProgramWithData::open(fixture("cuda/sm80/model.pte").string(), std::nullopt);
  REQUIRE_MESSAGE(program.ok(), program.error().message);
  REQUIRE(program->ptd() != nullptr);
  REQUIRE(program->cuda_delegates().size() == 1);
  const CudaDelegate& delegate = program->cuda_delegates()[0];
  CHECK(delegate.method == "forward");
  CHECK(delegate.where == fixture("cuda/sm80/model.pte").string() + ": forward delegate 0");
  REQUIRE(delegate.payload.has_value());
  // The library is the program's named data, the weights the data file's.
  auto library = program->find(delegate.payload->variants[0].so_key);
  REQUIRE(library.has_value());
  CHECK_FALSE(library->in_data_file);
  REQUIRE_FALSE(delegate.payload->weights.empty());
  auto weight = program->find(delegate.payload->weights[0].storage_key);
  REQUIRE(weight.has_value());
  CHECK(weight->in_data_file);
  CHECK(weight->file == program->ptd()->path());
}

TEST_CASE("program data: inspect maps each file once and reports the same program as before") {
  PTB_REQUIRE_FIXTURES();
  // The kernels of each library come from libbundle now, with no callback.
  auto inspected = inspect_path(fixture("cuda/sm80/model.pte").string());
  REQUIRE_MESSAGE(inspected.ok(), inspected.error().message);
  const auto* program = std::get_if<InspectProgram>(&inspected->body);
  REQUIRE(program != nullptr);
  const InspectDelegate& delegate = program->methods.at(0).delegates.at(0);
  REQUIRE(delegate.cuda.has_value());
  const auto& kernels = delegate.cuda->variants.at(0).kernels;
  REQUIRE(kernels.has_value());
  REQUIRE_FALSE(kernels->error.has_value());
  CHECK_FALSE(kernels->images.empty());
}
