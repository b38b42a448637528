// ptbundle verify: ExecuTorch's own CUDA exports and AOTInductor's packages
// from ../shared/fixtures pass; bundles made of them pass; each corruption
// (a deleted weights key, a short blob, a wrong size or SHA-256 in the
// manifest, a stray file, names that would leave the folder) is reported,
// and all of them together are all reported, not only the first.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/export/export.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/formats/segment_source.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* kWeightKey = "cuda_fqn_weight:cuda:layer.weight";
constexpr const char* kBiasKey = "cuda_fqn_weight:cuda:layer.bias";
constexpr const char* kNoDriver = "/nonexistent/libcuda.so.1";

VerifyReport verify(const std::vector<std::string>& paths, const std::string& gpu = "none") {
  VerifyOptions options;
  options.gpu = gpu;
  options.driver_library = kNoDriver;  // the same answer on a machine with a GPU
  auto report = verify_paths(paths, options);
  REQUIRE(report.ok());
  return std::move(report).value();
}

std::vector<CheckOutcome> with_status(const VerifyReport& report, CheckStatus status) {
  std::vector<CheckOutcome> out;
  for (const auto& outcome : report.checks.outcomes())
    if (outcome.status == status) out.push_back(outcome);
  return out;
}


// The one outcome of `check` whose subject or message mentions `text`.
const CheckOutcome* find_outcome(const VerifyReport& report, const std::string& check, const std::string& text) {
  for (const auto& outcome : report.checks.outcomes()) {
    if (outcome.check == check && (contains(outcome.message, text) || contains(outcome.subject, text))) return &outcome;
  }
  return nullptr;
}

std::string describe(const VerifyReport& report) {
  std::string text;
  for (const auto& o : report.checks.outcomes()) {
    text += std::string(check_status_name(o.status)) + " " + o.check + " " + o.subject + ": " + o.message + "\n";
  }
  return text;
}

std::string sha_of(const fs::path& path) {
  auto digest = sha256_file(path.string());
  REQUIRE(digest.ok());
  return *digest;
}

ManifestValue value_of(const ValueSpec& spec) {
  ManifestValue value{spec.kind, "", {}, ""};
  if (spec.tensor) {
    value.dtype = scalar_type_name(spec.tensor->scalar_type);
    value.shape = spec.tensor->sizes;
    value.dynamism = spec.tensor->dynamism;
  }
  return value;
}

// bundle.json for the files already in `dir`, as ptbundle export records
// them: sizes, digests, signatures, delegates and kernel targets.
ManifestPart describe_part(const fs::path& dir, const std::string& name) {
  ManifestPart part;
  part.name = name;
  part.source = {"executorch", {"model.pte"}};
  for (FileRole role : {FileRole::Program, FileRole::Data, FileRole::Testcase}) {
    const fs::path path = dir / part_file_path(name, role);
    if (!fs::exists(path)) continue;
    part.files.push_back({role, part_file_path(name, role), fs::file_size(path), sha_of(path)});
  }
  if (part.find_file(FileRole::Data)) part.data_name = name;
  auto pte = PteFile::open((dir / (name + ".pte")).string());
  REQUIRE(pte.ok());
  auto ptd = PtdFile::open((dir / (name + ".ptd")).string());
  std::set<std::pair<std::string, std::string>> targets;
  for (const MethodInfo& method : describe_methods(*pte)) {
    ManifestMethod m{method.name, {}, {}, {}};
    for (const auto& v : method.inputs) m.inputs.push_back(value_of(v));
    for (const auto& v : method.outputs) m.outputs.push_back(value_of(v));
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      const DelegateInfo& delegate = method.delegates[d];
      const auto* spec = delegate.find_spec("data_name");
      m.delegates.push_back({delegate.id, spec ? std::optional<std::string>(std::string(spec->value.begin(), spec->value.end()))
                                               : std::nullopt});
      auto payload = decode_cuda_payload(pte->delegate_payload(0, d), method.name, "test");
      REQUIRE(payload.ok());
      for (const auto& variant : payload->variants) {
        auto bytes = find_named_bytes(*pte, ptd.ok() ? &*ptd : nullptr, variant.so_key);
        REQUIRE(bytes.has_value());
        auto images = scan_kernels(bytes->bytes, "test");
        REQUIRE(images.ok());
        for (const auto& image : *images) targets.insert({image.target(), kernel_kind_name(image.kind)});
      }
    }
    part.methods.push_back(std::move(m));
  }
  CudaInfo cuda;
  for (const auto& [target, kind] : targets) cuda.kernel_targets.push_back({target, 0, kind});
  part.cuda = cuda;
  if (part.find_file(FileRole::Testcase)) part.testcase = ManifestTestcase{part_file_path(name, FileRole::Testcase), 1e-3, 1e-3, 1, 1, {}};
  return part;
}

void write_bundle_manifest(const fs::path& dir, const std::vector<std::string>& names) {
  Manifest manifest;
  manifest.ptbundle_version = "test";
  manifest.created = "2026-05-01T12:00:00Z";
  for (const auto& name : names) manifest.parts.push_back(describe_part(dir, name));
  REQUIRE(write_manifest(dir.string(), manifest).ok());
}

// Part `encoder` from ExecuTorch's export named_sm90 (data_name=encoder).
void make_encoder_bundle(const fs::path& dir) {
  fs::copy_file(fixture("cuda/named_sm90/model.pte"), dir / "encoder.pte");
  fs::copy_file(fixture("cuda/named_sm90/encoder.ptd"), dir / "encoder.ptd");
  for (const auto& p : {dir / "encoder.pte", dir / "encoder.ptd"}) fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
  write_bundle_manifest(dir, {"encoder"});
}

// ExecuTorch's data file rewritten: `drop` left out, `resize` cut short.
void rewrite_weights(const fs::path& from, const fs::path& to, const std::string& drop, const std::string& shorten = "",
                     uint64_t new_size = 0) {
  auto ptd = PtdFile::open(from.string());
  REQUIRE(ptd.ok());
  PtdContents contents;
  for (const auto& entry : ptd->entries()) {
    if (entry.key == drop) continue;
    const uint64_t size = entry.key == shorten ? new_size : entry.size;
    contents.add(entry.key, SegmentSource::file_range(ptd->file(), entry.file_offset, size), entry.layout);
  }
  const fs::path temporary = to.string() + ".new";
  REQUIRE(write_ptd_file(temporary.string(), contents).ok());
  fs::rename(temporary, to);
}

// A copy of `from` with every delegate's data_name spec set to `data_name`
// and, when `edit` is given, its CUDA payload changed by it.
void rewrite_program(const fs::path& from, const fs::path& to, const std::optional<std::string>& data_name,
                     const std::function<void(CudaPayload&)>& edit = {}) {
  auto pte = PteFile::open(from.string());
  REQUIRE(pte.ok());
  std::unique_ptr<fb::ProgramT> program(pte->program().UnPack());
  std::vector<SegmentSource> segments;
  for (const auto& s : pte->segments()) segments.push_back(SegmentSource::file_range(pte->file(), s.file_offset, s.size));
  std::vector<uint8_t> payload_bytes;
  auto& delegate = *program->execution_plan[0]->delegates[0];
  if (data_name) {
    bool set = false;
    for (auto& spec : delegate.compile_specs) {
      if (spec->key != "data_name") continue;
      spec->value.assign(data_name->begin(), data_name->end());
      set = true;
    }
    if (!set) {
      auto spec = std::make_unique<fb::CompileSpecT>();
      spec->key = "data_name";
      spec->value.assign(data_name->begin(), data_name->end());
      delegate.compile_specs.push_back(std::move(spec));
    }
  }
  if (edit) {
    const DelegateInfo info = describe_methods(*pte)[0].delegates[0];
    REQUIRE(info.location == "segment");
    auto payload = decode_cuda_payload(pte->delegate_payload(0, 0), "forward", "test");
    REQUIRE(payload.ok());
    edit(*payload);
    payload_bytes = encode_cuda_payload(*payload);
    segments[info.index] = SegmentSource::memory(Bytes(payload_bytes.data(), payload_bytes.size()));
  }
  const fs::path temporary = to.string() + ".new";
  REQUIRE(write_pte_file(temporary.string(), *program, segments).ok());
  fs::rename(temporary, to);
}

// A test case for named_sm90's forward: float32 [4, 32] in, [4, 64] out.
void write_testcase(const fs::path& dir, const std::string& name, int32_t input_rows = 4) {
  fs::create_directories(dir / kTestcaseFolder);
  static std::vector<uint8_t> input(4 * 32 * 4, 0), output(4 * 64 * 4, 0);
  PtdContents contents;
  contents.add(testcase_key("forward", false, 0), SegmentSource::memory(Bytes(input.data(), size_t(input_rows) * 32 * 4)),
               TensorLayout{6, {input_rows, 32}, {0, 1}});
  contents.add(testcase_key("forward", true, 0), SegmentSource::memory(Bytes(output.data(), output.size())),
               TensorLayout{6, {4, 64}, {0, 1}});
  REQUIRE(write_ptd_file((dir / part_file_path(name, FileRole::Testcase)).string(), contents).ok());
}

// What ptbundle export makes of ExecuTorch's sm80 export and AOTInductor's
// mlp_et package (with its example as the test case).
void export_two_parts(const fs::path& dir) {
  ExportOptions options;
  options.output_dir = dir.string();
  options.tool_version = "test";
  PartRequest encoder;
  encoder.name = "encoder";
  encoder.program = fixture("cuda/sm80/model.pte").string();
  PartRequest head;
  head.name = "head";
  head.program = fixture("aoti/mlp_et.pt2").string();
  head.example = ExampleFiles{{fixture("aoti/mlp_et.in0.npy").string()}, {fixture("aoti/mlp_et.out0.npy").string()}};
  options.parts = {encoder, head};
  auto exported = export_parts(options);
  REQUIRE(exported.ok());
}

void edit_manifest(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json json = nlohmann::json::parse(ptb::test::read_text(dir / "bundle.json"));
  edit(json);
  std::ofstream(dir / "bundle.json") << json.dump(2);
}

}  // namespace

TEST_CASE("verify: ExecuTorch's CUDA exports pass every integrity check") {
  PTB_REQUIRE_FIXTURES();
  struct Expect {
    const char* folder;
    const char* data_file;
    const char* libraries;
    const char* targets;
  };
  for (const Expect& e : {Expect{"sm80", "aoti_cuda_blob.ptd", "1 library", "sm_80 cubin"},
                          Expect{"sm90", "aoti_cuda_blob.ptd", "1 library", "sm_90 cubin"},
                          Expect{"ptx_fallback", "aoti_cuda_blob.ptd", "1 library", "compute_75 ptx"},
                          Expect{"named_sm90", "encoder.ptd", "1 library", "sm_90 cubin"},
                          Expect{"merged_reference", "aoti_cuda_blob.ptd", "4 libraries",
                                 "compute_75 ptx, sm_120 cubin, sm_80 cubin, sm_90 cubin"}}) {
    INFO(std::string(e.folder));
    const std::string program = fixture(std::string("cuda/") + e.folder + "/model.pte").string();
    VerifyReport report = verify({program});
    INFO(describe(report));
    CHECK(with_status(report, CheckStatus::Fail).empty());
    // The data file is found beside the program: named_sm90's through its data_name spec.
    const CheckOutcome* data = find_outcome(report, checks::kDataFile, e.data_file);
    REQUIRE(data);
    CHECK(data->status == CheckStatus::Pass);
    CHECK(contains(data->message, "found beside the program: 2 entries"));
    const CheckOutcome* keys = find_outcome(report, checks::kDelegateKeys, "forward delegate 0");
    REQUIRE(keys);
    CHECK(keys->status == CheckStatus::Pass);
    CHECK(contains(keys->message, std::string("multi_variant payload: ") + e.libraries + " and 2 weight storages (8448 bytes)"));
    const CheckOutcome* weights = find_outcome(report, checks::kWeights, "forward delegate 0");
    REQUIRE(weights);
    CHECK(weights->message == "2 weight views fit their storage");
    const CheckOutcome* targets = find_outcome(report, checks::kKernelTargets, program);
    REQUIRE(targets);
    CHECK(targets->message == std::string("the libraries hold ") + e.targets);
    // Without a GPU to judge against, and without a test case, nothing is failed.
    CHECK(find_outcome(report, checks::kGpu, "--gpu none")->status == CheckStatus::Skip);
    CHECK(find_outcome(report, checks::kTestcase, "lone .pte records no test case")->status == CheckStatus::Skip);
  }
}

TEST_CASE("verify: which exports run on which GPU, as ExecuTorch would pick and the driver would load") {
  PTB_REQUIRE_FIXTURES();
  // (fixture, GPU) -> runs. sm_80 code would run on 8.6, but ExecuTorch takes
  // a native variant only for exactly its SM; only the PTX fallback helps sm_75.
  struct Row {
    const char* folder;
    const char* gpu;
    bool runs;
    const char* says;
  };
  const Row rows[] = {
      {"sm80", "sm_80", true, "native for sm_80; its library runs on sm_80: 1 module using sm_80 cubin"},
      {"sm80", "sm_86", false, "(the sm_80 cubin could run on sm_86, but ExecuTorch does not pick it)"},
      {"sm80", "sm_89", false, "no variant for sm_89: the payload has sm_80"},
      {"sm80", "sm_90", false, "no variant for sm_90: the payload has sm_80"},
      {"sm80", "sm_120", false, "export on an sm_120 GPU and merge that export in"},
      {"sm80", "sm_75", false, "its libraries hold: variant 0 (sm_80): sm_80 cubin"},
      {"sm90", "sm_90", true, "1 module using sm_90 cubin"},
      {"sm90", "sm_80", false, "no variant for sm_80"},
      {"sm90", "sm_120", false, "no variant for sm_120"},
      {"named_sm90", "sm_90", true, "1 module using sm_90 cubin"},
      {"named_sm90", "sm_89", false, "no variant for sm_89"},
      {"ptx_fallback", "sm_75", true, "1 module using compute_75 PTX (compiled by the driver)"},
      {"ptx_fallback", "sm_86", true, "as the PTX fallback on sm_86"},
      {"ptx_fallback", "sm_120", true, "as the PTX fallback on sm_120"},
      {"merged_reference", "sm_80", true, "native for sm_80"},
      {"merged_reference", "sm_86", true, "as the PTX fallback on sm_86"},
      {"merged_reference", "sm_89", true, "as the PTX fallback on sm_89"},
      {"merged_reference", "sm_90", true, "native for sm_90; its library runs on sm_90: 1 module using sm_90 cubin"},
      {"merged_reference", "sm_120", true, "native for sm_120"},
      {"merged_reference", "sm_75", true, "compute_75 PTX (compiled by the driver)"},
  };
  for (const Row& row : rows) {
    const std::string row_name = std::string(row.folder) + " on " + row.gpu;
    INFO(row_name);
    const std::string program = fixture(std::string("cuda/") + row.folder + "/model.pte").string();
    VerifyReport report = verify({program}, row.gpu);
    const CheckOutcome* gpu = find_outcome(report, checks::kGpu, "forward delegate 0");
    REQUIRE(gpu);
    INFO(gpu->message);
    CHECK(gpu->status == (row.runs ? CheckStatus::Pass : CheckStatus::Fail));
    CHECK(contains(gpu->message, row.says));
    CHECK(report.checks.failed() == !row.runs);
    if (!row.runs) {
      // The part, what it has and what would make it run.
      CHECK(contains(gpu->message, program + ", forward delegate 0 cannot run on " + std::string(row.gpu)));
      CHECK(contains(gpu->message, std::string("export on an ") + row.gpu + " GPU"));
      CHECK(contains(gpu->message, "aot_inductor.emit_multi_arch_kernel=True"));
      CHECK(contains(gpu->message, "cuda_include_ptx"));
    }
  }
}

TEST_CASE("verify: --gpu auto without a GPU skips the GPU check with the reason, --gpu takes only capabilities") {
  PTB_REQUIRE_FIXTURES();
  VerifyReport report = verify({fixture("cuda/sm80/model.pte").string()}, "auto");
  CHECK_FALSE(report.checks.failed());
  const CheckOutcome* gpu = find_outcome(report, checks::kGpu, "forward delegate 0");
  REQUIRE(gpu);
  CHECK(gpu->status == CheckStatus::Skip);
  CHECK(contains(gpu->message, "no CUDA GPU: "));
  CHECK(contains(gpu->message, kNoDriver));
  CHECK(report.gpu.mode == GpuMode::Auto);

  for (const char* bad : {"sm_90a", "gpu0", "9"}) {
    VerifyOptions options;
    options.gpu = bad;
    auto refused = verify_paths({fixture("cuda/sm80/model.pte").string()}, options);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().kind == ErrorKind::Usage);
  }
}

TEST_CASE("verify: a bundle of ExecuTorch's export passes, and its manifest is checked against the files") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_encoder_bundle(dir.path());
  write_testcase(dir.path(), "encoder");
  write_bundle_manifest(dir.path(), {"encoder"});
  VerifyReport report = verify({dir.path().string()}, "sm_90");
  INFO(describe(report));
  CHECK_FALSE(report.checks.failed());
  for (const char* check : {checks::kManifest, checks::kName, checks::kNameCollision, checks::kFile, checks::kUnlistedFile,
                            checks::kProgram, checks::kDataFile, checks::kManifestProgram, checks::kDataName,
                            checks::kDelegateKeys, checks::kWeights, checks::kTestcaseFile, checks::kKernelTargets,
                            checks::kGpu}) {
    INFO(std::string(check));
    const CheckOutcome* outcome = find_outcome(report, check, "");
    REQUIRE(outcome);
    CHECK(outcome->status == CheckStatus::Pass);
  }
  CHECK(find_outcome(report, checks::kFile, "encoder.ptd")->message == "8832 bytes, SHA-256 as recorded");
  CHECK(find_outcome(report, checks::kDataName, "")->message == "data_name 'encoder' in 1 delegate, a valid file name");
  CHECK(find_outcome(report, checks::kKernelTargets, "part encoder")->message ==
        "the libraries hold sm_90 cubin, as bundle.json records");
  CHECK(find_outcome(report, checks::kTestcaseFile, "")->message ==
        "test case of method 'forward': 1 input(s), 1 expected output(s), matching its signature");
  // Reproducing it needs the runner and a GPU here.
  const CheckOutcome* testcase = find_outcome(report, checks::kTestcase, "part encoder");
  REQUIRE(testcase);
  CHECK(testcase->status == CheckStatus::Skip);
  if (!kRunnerBuilt) CHECK(contains(testcase->message, "-DPTB_LIBTORCH=ON"));
  else CHECK(contains(testcase->message, "no CUDA GPU"));

  // On an sm_80 GPU the part cannot run: a failed check naming the part.
  VerifyReport on_80 = verify({dir.path().string()}, "sm_80");
  auto failed = with_status(on_80, CheckStatus::Fail);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].check == checks::kGpu);
  CHECK(contains(failed[0].message, "part encoder, forward delegate 0 cannot run on sm_80"));
}

TEST_CASE("verify: each corruption of a bundle is reported with the file, the key and the fix") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir.path();
  make_encoder_bundle(bundle);
  const std::string ptd = (bundle / "encoder.ptd").string();

  SUBCASE("a weights key deleted from the data file") {
    rewrite_weights(ptd, ptd, kBiasKey);
    write_bundle_manifest(bundle, {"encoder"});  // the manifest agrees with the new file
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    INFO(describe(report));
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].check == checks::kDelegateKeys);
    CHECK(failed[0].subject == (bundle / "encoder.pte").string() + ": forward delegate 0");
    CHECK(contains(failed[0].message, std::string("key '") + kBiasKey + "', the storage of weight 'layer.bias', is in neither " + ptd));
    CHECK(contains(failed[0].message, "fails only at its first call, with an illegal memory access"));
    CHECK(contains(failed[0].message, "export the part again"));
  }
  SUBCASE("a weights blob cut short") {
    rewrite_weights(ptd, ptd, "", kWeightKey, 8000);
    write_bundle_manifest(bundle, {"encoder"});
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].check == checks::kDelegateKeys);
    CHECK(contains(failed[0].message, ptd + ": key '" + kWeightKey + "', the storage of weight 'layer.weight', holds 8000 bytes; "
                                      "the payload's storage_nbytes needs 8192 (a short blob"));
  }
  SUBCASE("a wrong SHA-256 and a wrong size in the manifest") {
    edit_manifest(bundle, [](nlohmann::json& json) {
      json["parts"][0]["files"][0]["sha256"] = std::string(64, '0');
      json["parts"][0]["files"][1]["size"] = 8833;
    });
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 2);
    CHECK(failed[0].check == checks::kFile);
    CHECK(failed[0].subject == (bundle / "encoder.pte").string());
    CHECK(contains(failed[0].message, "SHA-256 is 6b8210c28d270bc00ecc0de4711eb610aa396ea403f04bad90a716893698497f; bundle.json records 000"));
    CHECK(failed[1].subject == ptd);
    CHECK(contains(failed[1].message, "is 8832 bytes; bundle.json records 8833"));
  }
  SUBCASE("a listed file deleted: one problem, and what needs the file is skipped") {
    fs::remove(ptd);
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].check == checks::kFile);
    CHECK(failed[0].subject == ptd);
    CHECK(contains(failed[0].message, "missing: bundle.json lists it as the part's data file"));
    CHECK(find_outcome(report, checks::kDataFile, "")->status == CheckStatus::Skip);
    CHECK(find_outcome(report, checks::kDelegateKeys, "")->status == CheckStatus::Skip);
  }
  SUBCASE("a data file that is not ExecuTorch's: a reader error is a failed check") {
    { std::ofstream(ptd, std::ios::binary | std::ios::trunc) << "not a data file"; }
    write_bundle_manifest(bundle, {"encoder"});
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].check == checks::kDataFile);
    CHECK(failed[0].subject == ptd);
    CHECK(find_outcome(report, checks::kDelegateKeys, "data file did not open")->status == CheckStatus::Skip);
  }
  SUBCASE("files in the folder the manifest does not list") {
    fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), bundle / "aoti_cuda_blob.ptd");
    fs::copy_file(fixture("cuda/sm80/model.pte"), bundle / "Encoder.PTE");
    fs::create_directories(bundle / kTestcaseFolder);
    fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), bundle / kTestcaseFolder / "old.ptd");
    std::ofstream(bundle / "README.txt") << "not a part";
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 3);
    std::set<std::string> subjects;
    for (const auto& f : failed) {
      CHECK(f.check == checks::kUnlistedFile);
      CHECK(contains(f.message, "bundle.json does not list it"));
      subjects.insert(fs::path(f.subject).filename().string());
    }
    CHECK(subjects == std::set<std::string>{"aoti_cuda_blob.ptd", "Encoder.PTE", "old.ptd"});
  }
  SUBCASE("names in the manifest that would leave the folder or name a device") {
    edit_manifest(bundle, [](nlohmann::json& json) {
      nlohmann::json evil = json["parts"][0];
      evil["name"] = "../evil";
      nlohmann::json device = json["parts"][0];
      device["name"] = "CON";
      nlohmann::json twin = json["parts"][0];
      twin["name"] = "ENCODER";
      json["parts"].push_back(evil);
      json["parts"].push_back(device);
      json["parts"].push_back(twin);
    });
    VerifyReport report = verify({bundle.string()});
    INFO(describe(report));
    auto failed = with_status(report, CheckStatus::Fail);
    const CheckOutcome* evil = find_outcome(report, checks::kName, "\"../evil\"");
    REQUIRE(evil);
    CHECK(evil->status == CheckStatus::Fail);
    CHECK(contains(evil->message, "parts[1].name: part name \"../evil\" contains '/' at position 2"));
    const CheckOutcome* device = find_outcome(report, checks::kName, "\"CON\"");
    REQUIRE(device);
    CHECK(device->status == CheckStatus::Fail);
    CHECK(contains(device->message, "is a Windows device name"));
    const CheckOutcome* twin = find_outcome(report, checks::kNameCollision, "'ENCODER'");
    REQUIRE(twin);
    CHECK(twin->status == CheckStatus::Fail);
    CHECK(contains(twin->message, "parts[0].name 'encoder' and parts[3].name 'ENCODER' differ only in case"));
    // ENCODER's entry lists files named after "encoder": the reader refuses it.
    const CheckOutcome* entry = find_outcome(report, checks::kManifest, "parts[3].files[0].path");
    REQUIRE(entry);
    CHECK(entry->status == CheckStatus::Fail);
    CHECK(failed.size() == 4);
    // The good part is still checked in full.
    CHECK(find_outcome(report, checks::kDelegateKeys, "encoder.pte")->status == CheckStatus::Pass);
  }
  SUBCASE("a data_name compile spec pointing outside the folder") {
    rewrite_program(bundle / "encoder.pte", bundle / "encoder.pte", std::string("../evil"));
    write_bundle_manifest(bundle, {"encoder"});
    VerifyReport report = verify({bundle.string()});
    INFO(describe(report));
    // The manifest copied it too: both places are reported, and the part
    // entry is not used further.
    const CheckOutcome* in_manifest = find_outcome(report, checks::kName, "delegates[0].data_name");
    REQUIRE(in_manifest);
    CHECK(in_manifest->status == CheckStatus::Fail);
    CHECK(contains(in_manifest->message, "part name \"../evil\" contains '/'"));

    // A lone program with that spec: reported, and never used to find a data file.
    TempDir lone;
    rewrite_program(fixture("cuda/sm80/model.pte"), lone / "model.pte", std::string("../evil"));
    fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), lone.path().parent_path() / "evil.ptd",
                  fs::copy_options::overwrite_existing);
    VerifyReport lone_report = verify({(lone / "model.pte").string()});
    fs::remove(lone.path().parent_path() / "evil.ptd");
    const CheckOutcome* spec = find_outcome(lone_report, checks::kName, "compile spec data_name");
    REQUIRE(spec);
    CHECK(spec->status == CheckStatus::Fail);
    CHECK(contains(spec->subject, "model.pte: forward delegate 0"));
    const CheckOutcome* data = find_outcome(lone_report, checks::kDataFile, "");
    REQUIRE(data);
    CHECK(data->status == CheckStatus::Skip);
    CHECK_FALSE(contains(data->message, "evil"));
    // So the weights are missing: said, with where it looked.
    const CheckOutcome* keys = find_outcome(lone_report, checks::kDelegateKeys, kWeightKey);
    REQUIRE(keys);
    CHECK(contains(keys->message, "no data file was given or found beside it (looked for " + (lone / "model.ptd").string()));
  }
  SUBCASE("a weight view larger than its storage, and a bundle part without its data name") {
    rewrite_program(fixture("cuda/sm80/model.pte"), bundle / "encoder.pte", std::nullopt, [](CudaPayload& payload) {
      payload.weights[0].sizes = {64, 33};
    });
    write_bundle_manifest(bundle, {"encoder"});
    VerifyReport report = verify({bundle.string()});
    INFO(describe(report));
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 2);
    CHECK(failed[0].check == checks::kDataName);
    CHECK(contains(failed[0].message, "has no data_name compile spec; expected data_name='encoder'"));
    CHECK(failed[1].check == checks::kWeights);
    CHECK(contains(failed[1].message, "weight 'layer.weight' (float32, sizes [64, 33], strides [32, 1], storage_offset 0) "
                                      "reaches 8196 bytes of its 8192-byte storage"));
  }
  SUBCASE("a test case whose input does not match the method") {
    write_testcase(bundle, "encoder", 3);
    write_bundle_manifest(bundle, {"encoder"});
    VerifyReport report = verify({bundle.string()});
    auto failed = with_status(report, CheckStatus::Fail);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].check == checks::kTestcaseFile);
    CHECK(contains(failed[0].message, "key 'forward.input.0' is float32 [3, 32]; the method has float32 [4, 32]"));
    CHECK(contains(find_outcome(report, checks::kTestcase, "part encoder")->message, "failed its checks"));
  }
}

TEST_CASE("verify: every problem of a bundle is listed, not only the first, and the exit code says so") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir.path();
  make_encoder_bundle(bundle);
  rewrite_weights(bundle / "encoder.ptd", bundle / "encoder.ptd", kBiasKey);  // the manifest now disagrees too
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), bundle / "stale.ptd");
  edit_manifest(bundle, [](nlohmann::json& json) {
    json["parts"][0]["files"][0]["size"] = 1;
    nlohmann::json evil = json["parts"][0];
    evil["name"] = "../evil";
    json["parts"].push_back(evil);
  });
  VerifyReport report = verify({bundle.string()}, "sm_80");
  INFO(describe(report));
  std::set<std::string> failed;
  for (const auto& f : with_status(report, CheckStatus::Fail)) failed.insert(f.check + " " + fs::path(f.subject).filename().string());
  CHECK(failed == std::set<std::string>{"file encoder.pte", "file encoder.ptd", "delegate_keys encoder.pte: forward delegate 0",
                                        "unlisted_file stale.ptd", "name bundle.json: parts[1].name",
                                        "gpu part encoder, forward delegate 0"});

  auto cli = run_cli("verify " + quote(bundle) + " --gpu sm_80");
  CHECK(cli.exit_code == 1);
  size_t lines = 0;
  for (size_t at = cli.out.find("FAIL "); at != std::string::npos; at = cli.out.find("FAIL ", at + 1)) ++lines;
  CHECK(lines == 6);
  CHECK(contains(cli.out, bundle.string() + ": FAILED, 6 problem(s)"));
  CHECK(cli.err.empty());

  auto json_run = run_cli("verify --json " + quote(bundle) + " --gpu none");
  CHECK(json_run.exit_code == 1);
  auto document = nlohmann::json::parse(json_run.out);
  CHECK(document["ptbundle_verify_version"] == 1);
  CHECK(document["ok"] == false);
  CHECK(document["gpu"]["mode"] == "none");
  CHECK(document["summary"]["failed"] == 5);
  if (ptb::test::have_jsonschema()) {
    CHECK(ptb::test::schema_problem("verify", json_run.out) == "");
  } else {
    ptb::test::skip("python3 with the jsonschema module is not installed: the JSON Schema is not checked");
  }
  for (const auto& check : document["checks"]) {
    CHECK(check.size() == 5);
    for (const char* key : {"check", "subject", "status", "message", "path"}) CHECK(check.contains(key));
    CHECK((check["status"] == "pass" || check["status"] == "fail" || check["status"] == "skip"));
  }
}

TEST_CASE("verify: bundles written by ptbundle export pass, and corruptions are caught in all three payload forms") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir / "bundle";
  export_two_parts(bundle);
  VerifyReport report = verify({bundle.string()});
  INFO(describe(report));
  CHECK_FALSE(report.checks.failed());
  CHECK(find_outcome(report, checks::kTestcaseFile, "head.ptd")->message ==
        "test case of method 'forward': 1 input(s), 1 expected output(s), matching its signature");
  CHECK(find_outcome(report, checks::kKernelTargets, "part head")->message == "the libraries hold sm_90a cubin, as bundle.json records");
  CHECK(find_outcome(report, checks::kKernelTargets, "part encoder")->message == "the libraries hold sm_80 cubin, as bundle.json records");
  CHECK(contains(find_outcome(report, checks::kDelegateKeys, "head.pte")->message,
                 "single_blob payload: 1 library and 1 weights blob (3200 bytes) present"));

  VerifyReport on_90 = verify({bundle.string()}, "sm_90");
  auto refused = with_status(on_90, CheckStatus::Fail);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].subject == "part encoder, forward delegate 0");
  CHECK(find_outcome(on_90, checks::kGpu, "part head")->status == CheckStatus::Pass);

  const fs::path head_ptd = bundle / "head.ptd";
  auto weights_key = [&] {
    auto ptd = PtdFile::open(head_ptd.string());
    REQUIRE(ptd.ok());
    REQUIRE(ptd->entries().size() == 1);
    return ptd->entries()[0].key;
  }();
  SUBCASE("single blob: the weights blob deleted") {
    rewrite_weights(head_ptd, head_ptd, weights_key);
    VerifyReport broken = verify({bundle.string()});
    std::set<std::string> failed;
    for (const auto& f : with_status(broken, CheckStatus::Fail)) failed.insert(f.check + " " + fs::path(f.subject).filename().string());
    CHECK(failed == std::set<std::string>{"file head.ptd", "delegate_keys head.pte: forward delegate 0"});
    CHECK(contains(find_outcome(broken, checks::kDelegateKeys, "head.pte")->message,
                   "key '" + weights_key + "', the weights blob, is in neither " + head_ptd.string()));
  }
  SUBCASE("single blob: the weights blob emptied") {
    rewrite_weights(head_ptd, head_ptd, "", weights_key, 0);
    VerifyReport broken = verify({bundle.string()});
    const CheckOutcome* keys = find_outcome(broken, checks::kDelegateKeys, "head.pte");
    CHECK(keys->status == CheckStatus::Fail);
    CHECK(contains(keys->message, head_ptd.string() + ": key '" + weights_key + "', the weights blob, is empty"));
  }
  SUBCASE("method-keyed: the keys it implies are absent") {
    rewrite_program(bundle / "head.pte", bundle / "head.pte", std::nullopt,
                    [](CudaPayload& payload) { payload.form = CudaPayloadForm::MethodKeyed; });
    VerifyReport broken = verify({bundle.string()});
    INFO(describe(broken));
    size_t missing = 0;
    for (const auto& f : with_status(broken, CheckStatus::Fail)) {
      if (f.check != checks::kDelegateKeys) continue;
      ++missing;
      CHECK((contains(f.message, "key 'forward_so_blob', the library,") ||
             contains(f.message, "key 'forward_weights_blob', the weights blob,")));
    }
    CHECK(missing == 2);
    CHECK(find_outcome(broken, checks::kFile, "head.pte")->status == CheckStatus::Fail);  // its SHA-256 changed
  }
}

TEST_CASE("verify: lone programs, data files given after a comma, BundledPrograms, and inputs that are none of these") {
  PTB_REQUIRE_FIXTURES();
  // sm80's program with sm86's data file: the same keys and sizes, so it
  // verifies; the bytes differ, which only a manifest's SHA-256 could catch.
  const std::string pair = fixture("cuda/sm80/model.pte").string() + "," + fixture("cuda/bad_weights_sm86/aoti_cuda_blob.ptd").string();
  VerifyReport given = verify({pair});
  CHECK_FALSE(given.checks.failed());
  CHECK(contains(find_outcome(given, checks::kDataFile, "bad_weights_sm86")->message, "given: 2 entries"));

  VerifyReport bundled = verify({fixture("executorch/bundled_program.bpte").string()});
  INFO(describe(bundled));
  CHECK_FALSE(bundled.checks.failed());
  CHECK(contains(find_outcome(bundled, checks::kProgram, "bundled_program.bpte")->message, "BundledProgram with"));
  CHECK(contains(find_outcome(bundled, checks::kTestcase, "")->message, "no CudaBackend delegate"));

  VerifyReport portable = verify({fixture("executorch/add.pte").string()});
  CHECK_FALSE(portable.checks.failed());
  CHECK(find_outcome(portable, checks::kDelegateKeys, "")->message == "no delegate: the program references no external key");

  TempDir dir;
  fs::copy_file(fixture("cuda/sm80/model.pte"), dir / "short.pte");
  fs::resize_file(dir / "short.pte", 20000);
  VerifyReport rest = verify({(dir / "short.pte").string(), (dir / "missing.pte").string(),
                              fixture("cuda/sm80/aoti_cuda_blob.ptd").string(), dir.path().string()});
  auto failed = with_status(rest, CheckStatus::Fail);
  REQUIRE(failed.size() == 4);
  CHECK(failed[0].check == checks::kProgram);
  CHECK(contains(failed[0].message, "short.pte"));
  CHECK(failed[1].check == checks::kInput);
  CHECK(failed[1].message == (dir / "missing.pte").string() + ": cannot open: No such file or directory");
  CHECK(contains(failed[2].message, "a data file is verified with its program"));
  CHECK(contains(failed[3].message, "folder without bundle.json"));
}

TEST_CASE("verify: AOTInductor packages: the layouts export takes, and their kernels") {
  PTB_REQUIRE_FIXTURES();
  VerifyReport et = verify({fixture("aoti/mlp_et.pt2").string()}, "sm_90");
  INFO(describe(et));
  CHECK_FALSE(et.checks.failed());
  CHECK(contains(find_outcome(et, checks::kPackageLayout, "model model")->message, "ready for ptbundle export"));
  CHECK(contains(find_outcome(et, checks::kGpu, "model model")->message, "runs on sm_90: 2 modules using sm_90a cubin (compiled on sm_90)"));
  VerifyReport et_80 = verify({fixture("aoti/mlp_et.pt2").string()}, "sm_80");
  CHECK(find_outcome(et_80, checks::kGpu, "model model")->status == CheckStatus::Fail);

  // PyTorch's defaults: kernel files beside the library, weights compiled
  // into it; export takes that layout too, and the cubins' target is judged.
  VerifyReport plain = verify({fixture("aoti/mlp_sm90.pt2").string()}, "sm_90");
  INFO(describe(plain));
  CHECK_FALSE(plain.checks.failed());
  CHECK(contains(find_outcome(plain, checks::kPackageLayout, "model model")->message,
                 "2 kernel file(s) beside the library, weights compiled into the library"));
  CHECK(contains(find_outcome(plain, checks::kGpu, "model model")->message, "runs on sm_90"));
  VerifyReport plain_80 = verify({fixture("aoti/mlp_sm90.pt2").string()}, "sm_80");
  CHECK(find_outcome(plain_80, checks::kGpu, "model model")->status == CheckStatus::Fail);
}

TEST_CASE("verify: the command line, its exit codes and --json") {
  PTB_REQUIRE_FIXTURES();
  const std::string sm90 = quote(fixture("cuda/sm90/model.pte"));
  auto ok = run_cli("verify " + sm90 + " --gpu sm_90");
  CHECK(ok.exit_code == 0);
  CHECK(contains(ok.out, ": ok ("));
  CHECK_FALSE(contains(ok.out, "FAIL"));
  auto verbose = run_cli("verify -v " + sm90 + " --gpu sm_90");
  CHECK(contains(verbose.out, "ok   gpu "));

  auto refused = run_cli("verify " + sm90 + " --gpu sm_80");
  CHECK(refused.exit_code == 1);
  CHECK(contains(refused.out, "FAIL gpu "));

  auto usage = run_cli("verify " + sm90 + " --gpu sm_90a");
  CHECK(usage.exit_code == 2);
  CHECK(contains(usage.err, "GPU 'sm_90a'"));

  // The GPU here decides; without one the check is skipped, so either way this passes.
  auto automatic = run_cli("verify --json " + sm90);
  CHECK(automatic.exit_code == 0);
  auto document = nlohmann::json::parse(automatic.out);
  CHECK(document["ok"] == true);
  CHECK(document["gpu"]["mode"] == "auto");
  CHECK(document["paths"][0]["failed"] == 0);
}

TEST_CASE("verify: a warning is tallied as a warning, not as skipped, in text and --json") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir.path();
  make_encoder_bundle(bundle);
  // What a killed export leaves (a leftover temporary file): a warning, verify still passes.
  { std::ofstream(bundle / ".encoder.pte.a1B2c3.tmp") << "partial"; }

  auto json_run = run_cli("verify --json " + quote(bundle) + " --gpu none");
  INFO(json_run.out);
  CHECK(json_run.exit_code == 0);
  auto document = nlohmann::json::parse(json_run.out);
  size_t warned = 0, skipped = 0;
  for (const auto& check : document["checks"]) {
    if (check["status"] == "warn") ++warned;
    if (check["status"] == "skip") ++skipped;
  }
  REQUIRE(warned == 1);
  CHECK(document["summary"]["warned"] == warned);
  CHECK(document["summary"]["skipped"] == skipped);
  CHECK(document["paths"][0]["warned"] == warned);
  CHECK(document["paths"][0]["skipped"] == skipped);
  CHECK(document["summary"]["checks"] == document["checks"].size());
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("verify", json_run.out) == "");

  auto text = run_cli("verify " + quote(bundle) + " --gpu none");
  CHECK(text.exit_code == 0);
  CHECK(contains(text.out, "WARN leftover "));
  CHECK(contains(text.out, " skipped, 1 warned; GPU: "));
}

// ---- On the GPU (scripts/gpu-check) ----

namespace {

// Why test cases cannot be reproduced here, or "" when they can.
std::string reproduction_missing() {
  if (!kRunnerBuilt) return runner_unavailable_reason();
  // The parts come from mlp_et.pt2, whose library links LibTorch: only the
  // LibTorch runtime runs it (the built-in one refuses it by name).
  if (!kLibTorchRunnerBuilt) return "built without the LibTorch runtime, which mlp_et.pt2's library needs";
  GpuReport gpus = discover_gpus();
  if (gpus.gpus.empty()) return "no CUDA GPU: " + gpus.reason;
  return "";
}

// testcases/head.ptd with every expected output value moved by `delta`.
void shift_expected_output(const fs::path& bundle, float delta) {
  const fs::path path = bundle / part_file_path("head", FileRole::Testcase);
  std::vector<std::vector<uint8_t>> keep;
  PtdContents contents;
  {
    auto ptd = PtdFile::open(path.string());
    REQUIRE(ptd.ok());
    keep.reserve(ptd->entries().size());  // the spans below point into it
    for (const auto& entry : ptd->entries()) {
      Bytes bytes = ptd->bytes(entry);
      keep.emplace_back(bytes.begin(), bytes.end());
      if (entry.key == testcase_key("forward", true, 0)) {
        REQUIRE(entry.layout->scalar_type == 6);
        for (size_t i = 0; i + 4 <= keep.back().size(); i += 4) {
          float value;
          std::memcpy(&value, keep.back().data() + i, 4);
          value += delta;
          std::memcpy(keep.back().data() + i, &value, 4);
        }
      }
      contents.add(entry.key, SegmentSource::memory(Bytes(keep.back().data(), keep.back().size())), entry.layout);
    }
  }
  REQUIRE(write_ptd_file((path.string() + ".new"), contents).ok());
  fs::rename(path.string() + ".new", path);
  edit_manifest(bundle, [&](nlohmann::json& json) {
    for (auto& part : json["parts"]) {
      for (auto& file : part["files"]) {
        if (file["role"] != "testcase") continue;
        file["size"] = fs::file_size(path);
        file["sha256"] = sha_of(path);
      }
    }
  });
}

}  // namespace

TEST_CASE("verify on the GPU: an exported part's test case is reproduced, and a wrong expected output is caught") {
  PTB_REQUIRE_FIXTURES();
  if (std::string missing = reproduction_missing(); !missing.empty()) {
    ptb::test::skip(missing);
    return;
  }
  if (discover_gpus().gpus.front().capability != GpuCapability{9, 0}) {
    ptb::test::skip("mlp_et.pt2 holds sm_90a code only, and the first GPU here is not sm_90");
    return;
  }
  TempDir dir;
  const fs::path bundle = dir / "bundle";
  export_two_parts(bundle);
  VerifyOptions options;  // this machine's GPU and driver
  auto report = verify_paths({bundle.string()}, options);
  REQUIRE(report.ok());
  INFO(describe(*report));
  const CheckOutcome* head = find_outcome(*report, checks::kTestcase, "part head");
  REQUIRE(head);
  CHECK(head->status == CheckStatus::Pass);
  CHECK(contains(head->message, "part head reproduces its test case (1 output, max abs diff"));
  std::printf("[gpu] verify %s: %s\n", report->gpu.description.c_str(), head->message.c_str());
  CHECK(find_outcome(*report, checks::kGpu, "part head")->status == CheckStatus::Pass);
  // The encoder was exported for sm_80 only.
  CHECK(find_outcome(*report, checks::kGpu, "part encoder")->status == CheckStatus::Fail);

  shift_expected_output(bundle, 0.5f);
  auto shifted = verify_paths({bundle.string()}, options);
  REQUIRE(shifted.ok());
  const CheckOutcome* wrong = find_outcome(*shifted, checks::kTestcase, "part head");
  REQUIRE(wrong);
  CHECK(wrong->status == CheckStatus::Fail);
  CHECK(contains(wrong->message, "part head does not reproduce its test case (max abs diff"));
  CHECK(contains(wrong->message, "export it again on this GPU"));
  std::printf("[gpu] verify, expected output moved by 0.5: %s\n", wrong->message.c_str());
}
