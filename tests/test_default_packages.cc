// AOTInductor packages made with PyTorch's defaults (mlp_sm90.pt2:
// torch._inductor.aoti_compile_and_package with no options): kernels as
// separate .cubin files, weights compiled into the library, the library
// linked to LibTorch. Export keeps the kernel files as named data of the
// program, leaves the weights in the library, and records both; verify,
// inspect, merge and run read them. Every package here is PyTorch's own
// bytes, changed only where a test says (pt2_zip.h).
#include <nlohmann/json.hpp>

#include <filesystem>

#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/export/export.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/kernels/elf_imports.h"
#include "ptbundle/results/tolerance.h"
#include "gpu_support.h"
#include "pt2_zip.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;
using ptb::test::fixture;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;
using ptb::test::ZipEntry;
namespace fs = std::filesystem;

namespace {

const char* kCubins[] = {"cj5jc44ii5saeckbg5pt2qt6sov35toygjqbvcyja3efwv23qx5c.cubin",
                         "cv7wskqmbtakayrcmymokvestjza4uajyrfgxywipqxz4f2y6cxo.cubin"};

// mlp_sm90 holds the same weights as mlp_et (the same module compiled the
// other way), so mlp_et's example is its example too.
std::string example(const std::string& part) {
  return " --example " + part + "=" + quote(fixture("aoti/mlp_et.in0.npy")) + ":" + quote(fixture("aoti/mlp_et.out0.npy"));
}

ptb::test::CommandResult export_cli(const fs::path& bundle, const std::string& part, const fs::path& package) {
  return run_cli("export -o " + quote(bundle) + " --json --part " + part + "=" + quote(package) + example(part));
}

nlohmann::json manifest_json(const fs::path& bundle) {
  return nlohmann::json::parse(ptb::test::read_text(bundle / "bundle.json"));
}

// mlp_sm90's entries with its cubins' e_flags naming `sm` instead of 90:
// a second GPU variant of the same package for merge.
std::vector<ZipEntry> retargeted(uint8_t sm) {
  std::vector<ZipEntry> entries = ptb::test::zip_entries(fixture("aoti/mlp_sm90.pt2"));
  for (ZipEntry& entry : entries) {
    if (!entry.name.ends_with(".cubin")) continue;
    REQUIRE(entry.bytes.size() > 64);
    REQUIRE(static_cast<uint8_t>(entry.bytes[8]) >= 8);  // EI_ABIVERSION 8: the SM in e_flags bits 8-15
    REQUIRE(static_cast<uint8_t>(entry.bytes[49]) == 90);
    entry.bytes[49] = static_cast<char>(sm);
  }
  return entries;
}

}  // namespace

TEST_CASE("default packages: the library's kernel file names and constants section, from PyTorch's bytes") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(fixture("aoti/mlp_sm90.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  const Pt2Model& model = package->models().front();
  REQUIRE(model.kernel_binaries.size() == 2);
  CHECK(model.weights_in_library());
  CHECK(check_cuda_package_model(*package, model, /*read_through=*/true).ok());

  auto library = package->read_entry(model.wrapper_library, 64 << 20);
  REQUIRE(library.ok());
  const Bytes bytes(library->data(), library->size());
  CHECK(kernel_files_named_by(bytes) == std::vector<std::string>{kCubins[0], kCubins[1]});
  CHECK(check_kernel_files_present(bytes, {kCubins[0], kCubins[1]}, "lib", "the package").ok());
  auto missing = check_kernel_files_present(bytes, {kCubins[1]}, "lib", "the package");
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.error().message, "loads 1 kernel file (" + std::string(kCubins[0]) + ") that the package does not hold"));

  // The constants section holds the bytes mlp_et's weights blob holds: the
  // same module, its weights compiled in rather than written beside it.
  auto range = find_aoti_constants(bytes, "lib");
  REQUIRE_MESSAGE(range.ok(), range.error().message);
  REQUIRE(range->has_value());
  CHECK((*range)->size == 3200);
  auto et = Pt2Package::open(fixture("aoti/mlp_et.pt2").string());
  REQUIRE(et.ok());
  auto blob = et->read_entry(*et->models().front().weights_blob, 1 << 20);
  REQUIRE(blob.ok());
  CHECK(std::equal(blob->begin(), blob->end(), library->begin() + static_cast<std::ptrdiff_t>((*range)->offset)));

  // A link_libtorch=True library: LibTorch among its dependencies.
  auto symbols = read_dynamic_symbols(bytes, "lib");
  REQUIRE(symbols.ok());
  CHECK(libtorch_dependencies(*symbols) == std::vector<std::string>{"libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so"});
}

TEST_CASE("default packages: kernel file names a runner could not create are refused") {
  CHECK(check_kernel_file_name("cj5jc44ii5saeckbg5pt2qt6sov35toygjqbvcyja3efwv23qx5c.cubin", "x").ok());
  CHECK(check_kernel_file_name("k_0.fatbin", "x").ok());
  CHECK(check_kernel_file_name("k.ptx", "x").ok());
  for (const char* bad : {"../x.cubin", "x/y.cubin", ".x.cubin", "-x.cubin", "x.so", ".cubin", "", "x y.cubin",
                          "x\n.cubin"}) {
    CAPTURE(bad);
    auto refused = check_kernel_file_name(bad, "where");
    REQUIRE_FALSE(refused.ok());
    CHECK(contains(refused.error().message, "where: kernel file name"));
  }
  CHECK_FALSE(check_kernel_file_name(std::string(201, 'a') + ".cubin", "x").ok());
}

TEST_CASE("default packages: export, verify and inspect mlp_sm90.pt2") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir / "bundle";
  auto exported = export_cli(bundle, "mlp", fixture("aoti/mlp_sm90.pt2"));
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("export", exported.out) == "");
  const std::string notes = nlohmann::json::parse(exported.out)["parts"][0]["notes"].dump();
  CHECK(contains(notes, "the weights are compiled into the library (3200 bytes of constants)"));
  CHECK(contains(notes, "2 kernel files beside the library"));

  // bundle.json: weights in the library, the constants' digest (that of
  // mlp_et's blob, the same bytes), the runtime, the cubins' target.
  auto json = manifest_json(bundle);
  const auto& cuda = json["parts"][0]["cuda"];
  CHECK(cuda["weights"] == "library");
  CHECK(cuda["runtime"] == "LibTorch");
  CHECK(cuda["constants"]["bytes"] == 3200);
  auto et = Pt2Package::open(fixture("aoti/mlp_et.pt2").string());
  REQUIRE(et.ok());
  auto blob_sha = et->sha256_entry(*et->models().front().weights_blob, 1 << 20);
  REQUIRE(blob_sha.ok());
  CHECK(cuda["constants"]["sha256"] == *blob_sha);
  CHECK(contains(cuda["kernel_targets"].dump(), "\"sm\":90"));
  auto manifest = read_manifest(bundle.string());
  REQUIRE_MESSAGE(manifest.ok(), manifest.error().message);
  CHECK(manifest->parts[0].cuda->weights_in_library);

  // The program holds the library and its two cubins, keyed under the library's key.
  auto pte = PteFile::open((bundle / "mlp.pte").string());
  REQUIRE_MESSAGE(pte.ok(), pte.error().message);
  std::string library_key;
  for (const PteNamedData& entry : pte->named_data())
    if (entry.key.ends_with("_so_blob")) library_key = entry.key;
  REQUIRE_FALSE(library_key.empty());
  auto files = kernel_files_of(*pte, library_key);
  REQUIRE(files.ok());
  REQUIRE(files->size() == 2);
  CHECK((*files)[0].name == kCubins[0]);
  CHECK((*files)[1].key == library_key + "/" + kCubins[1]);
  auto cubin = ptb::test::zip_entries(fixture("aoti/mlp_sm90.pt2"));
  Bytes stored = pte->named_data_bytes(*(*files)[0].entry);
  CHECK(std::string(stored.begin(), stored.end()) == ptb::test::entry_ending(cubin, kCubins[0])->bytes);

  // verify: every check passes; the test case is skipped without a GPU.
  auto verified = run_cli("verify " + quote(bundle) + " --gpu sm_90 --verbose --json");
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("verify", verified.out) == "");
  CHECK(contains(verified.out, "with 2 kernel files"));
  CHECK(contains(verified.out, "the library holds its weights"));

  // inspect: the cubins with their targets, and the runtime the library needs.
  auto inspected = run_cli("inspect --json " + quote(bundle));
  REQUIRE_MESSAGE(inspected.exit_code == 0, inspected.err);
  if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("inspect", inspected.out) == "");
  const std::string document = nlohmann::json::parse(inspected.out).dump();
  CHECK(contains(document, "\"needs\":\"LibTorch\""));
  CHECK(contains(document, "\"name\":\"" + std::string(kCubins[0]) + "\""));
  auto text = run_cli("inspect " + quote(bundle / "mlp.pte"));
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK(contains(text.out, "Kernel files (2, loaded by name at run time):"));
  CHECK(contains(text.out, kCubins[1]));
  CHECK(contains(text.out, "sm_90"));
  CHECK(contains(text.out, "Runtime: LibTorch"));

  // The package itself verifies too: its layout is one export takes.
  auto package = run_cli("verify " + quote(fixture("aoti/mlp_sm90.pt2")) + " --gpu sm_90 --verbose");
  CHECK_MESSAGE(package.exit_code == 0, (package.out + package.err));
  CHECK(contains(package.out, "2 kernel file(s) beside the library, weights compiled into the library"));
}

TEST_CASE("default packages: a changed cubin in a bundle is caught by verify") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir / "bundle";
  auto exported = export_cli(bundle, "mlp", fixture("aoti/mlp_sm90.pt2"));
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  uint64_t offset = 0;
  {
    auto pte = PteFile::open((bundle / "mlp.pte").string());
    REQUIRE(pte.ok());
    const PteNamedData* cubin = nullptr;
    for (const PteNamedData& entry : pte->named_data())
      if (entry.key.ends_with(kCubins[1])) cubin = &entry;
    REQUIRE(cubin);
    offset = pte->segments()[cubin->segment_index].file_offset + 200;
  }
  ptb::test::flip_byte(bundle / "mlp.pte", offset);

  auto verified = run_cli("verify " + quote(bundle) + " --gpu sm_90");
  CHECK(verified.exit_code == 1);
  CHECK_MESSAGE(contains(verified.out, "mlp.pte"), verified.out);
  CHECK_MESSAGE(contains(verified.out, "SHA-256 is "), verified.out);
  CHECK(contains(verified.out, "bundle.json records"));
}

TEST_CASE("default packages: a kernel file the library names but the package lacks is refused") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  std::vector<ZipEntry> entries;
  for (ZipEntry& entry : ptb::test::zip_entries(fixture("aoti/mlp_sm90.pt2")))
    if (!entry.name.ends_with(kCubins[0])) entries.push_back(std::move(entry));
  ptb::test::write_zip(dir / "short.pt2", entries);

  const fs::path bundle = dir / "bundle";
  auto exported = export_cli(bundle, "mlp", dir / "short.pt2");
  CHECK(exported.exit_code == 1);
  CHECK_MESSAGE(contains(exported.out, "the library loads 1 kernel file (" + std::string(kCubins[0]) +
                                           ") that the package does not hold"),
                exported.out);
  CHECK_FALSE(fs::exists(bundle / "bundle.json"));

  auto verified = run_cli("verify " + quote(dir / "short.pt2"));
  CHECK(verified.exit_code == 1);
  CHECK(contains(verified.out, "does not hold"));

  auto opened = open_run_part((dir / "short.pt2").string(), RunPartOptions{});
  REQUIRE_FALSE(opened.ok());
  CHECK(contains(opened.error().message, "does not hold"));
}

TEST_CASE("default packages: hostile kernel file names are refused") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  // A kernel entry that climbs out of the model's folder.
  std::vector<ZipEntry> entries = ptb::test::zip_entries(fixture("aoti/mlp_sm90.pt2"));
  for (ZipEntry& entry : entries) {
    if (entry.name.ends_with(kCubins[0])) entry.name = "mlp/data/aotinductor/model/sub/../x.cubin";
  }
  ptb::test::write_zip(dir / "hostile.pt2", entries);
  auto exported = export_cli(dir / "bundle", "mlp", dir / "hostile.pt2");
  CHECK(exported.exit_code == 1);
  CHECK_MESSAGE(contains(exported.out, "kernel file name 'sub/../x.cubin' is not a plain file name"), exported.out);
  CHECK_FALSE(fs::exists(dir / "bundle" / "bundle.json"));
  auto opened = open_run_part((dir / "hostile.pt2").string(), RunPartOptions{});
  REQUIRE_FALSE(opened.ok());
  CHECK(contains(opened.error().message, "is not a plain file name"));
  auto verified = run_cli("verify " + quote(dir / "hostile.pt2"));
  CHECK(verified.exit_code == 1);
  CHECK(contains(verified.out, "is not a plain file name"));
}

TEST_CASE("default packages: merge two GPU variants of a default package") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::write_zip(dir / "mlp_sm80.pt2", retargeted(80));
  auto a = export_cli(dir / "a", "mlp", fixture("aoti/mlp_sm90.pt2"));
  REQUIRE_MESSAGE(a.exit_code == 0, (a.out + a.err));
  auto b = export_cli(dir / "b", "mlp", dir / "mlp_sm80.pt2");
  REQUIRE_MESSAGE(b.exit_code == 0, (b.out + b.err));
  CHECK(contains(manifest_json(dir / "b")["parts"][0]["cuda"]["kernel_targets"].dump(), "\"sm\":80"));

  auto merged = run_cli("merge -o " + quote(dir / "m") + " " + quote(dir / "a") + " " + quote(dir / "b"));
  REQUIRE_MESSAGE(merged.exit_code == 0, (merged.out + merged.err));
  auto json = manifest_json(dir / "m");
  const auto& part = json["parts"][0];
  const std::string targets = part["cuda"]["kernel_targets"].dump();
  CHECK(contains(targets, "\"sm\":80"));
  CHECK(contains(targets, "\"sm\":90"));
  CHECK(part["cuda"]["weights"] == "library");
  CHECK(part["cuda"]["constants"]["bytes"] == 3200);  // the same weights in both

  // Each target's program keeps its library and its own cubins.
  size_t programs = 0;
  for (const auto& file : part["files"]) {
    if (file["role"] != "program") continue;
    ++programs;
    auto pte = PteFile::open((dir / "m" / file["path"].get<std::string>()).string());
    REQUIRE_MESSAGE(pte.ok(), pte.error().message);
    size_t cubins = 0;
    for (const PteNamedData& entry : pte->named_data()) cubins += entry.key.ends_with(".cubin");
    CHECK(cubins == 2);
  }
  CHECK(programs == 2);
  for (const char* gpu : {"sm_80", "sm_90"}) {
    auto verified = run_cli("verify " + quote(dir / "m") + " --gpu " + gpu);
    CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  }
  auto wrong = run_cli("verify " + quote(dir / "m") + " --gpu sm_75");
  CHECK(wrong.exit_code == 1);
}

TEST_CASE("default packages: a LibTorch-linked part is refused by name where this build has no LibTorch") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(fixture("aoti/mlp_sm90.pt2").string());
  REQUIRE(package.ok());
  auto library = package->read_entry(package->models().front().wrapper_library, 64 << 20);
  REQUIRE(library.ok());
  auto choice = choose_runtime(Bytes(library->data(), library->size()), "mlp_sm90.pt2: library", AotiRuntime::Auto,
                               RuntimeAvailability{true, false});
  REQUIRE_FALSE(choice.ok());
  const std::string& message = choice.error().message;
  CHECK(contains(message, "the library is linked to LibTorch (it needs libtorch.so, libtorch_cpu.so, libtorch_cuda.so"));
  CHECK(contains(message, "imports aoti_torch__reinterpret_tensor, "));
  CHECK(contains(message, "aot_inductor.link_libtorch=True"));
  CHECK(contains(message, "this build has no LibTorch runtime"));
  // Where LibTorch is built, it serves the library.
  auto served = choose_runtime(Bytes(library->data(), library->size()), "lib", AotiRuntime::Auto,
                               RuntimeAvailability{true, true});
  REQUIRE(served.ok());
  CHECK(served->kind == AotiRuntime::LibTorch);

  // `run` opens the part (the kernel files with it) before it asks for a runtime.
  auto part = open_run_part(fixture("aoti/mlp_sm90.pt2").string(), RunPartOptions{});
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  CHECK(part->kernel_files.size() == 2);
  CHECK(part->weights.layout == WeightsLayout::None);
  if (!kLibTorchRunnerBuilt && kRunnerBuilt) {
    auto run = run_cli("run " + quote(fixture("aoti/mlp_sm90.pt2")) + " --input 0=" + quote(fixture("aoti/mlp_et.in0.npy")));
    const std::string said = run.out + run.err;
    CHECK(run.exit_code == 1);
    CHECK_MESSAGE(contains(said, "linked to LibTorch"), said);
    CHECK_MESSAGE(contains(said, "this build has no LibTorch runtime"), said);
  }
}

TEST_CASE("run on GPU: mlp_sm90.pt2 (PyTorch's defaults) runs on LibTorch with its kernel files, matching eager") {
  PTB_REQUIRE_GPU();
  ptb::test::ScopedTmpdir tmp;
  auto part = open_run_part(fixture("aoti/mlp_sm90.pt2").string(), ptb::test::this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  {
    auto model = load_part(*part, {});
    REQUIRE_MESSAGE(model.ok(), model.error().message);
    CHECK(model->runtime().kind == AotiRuntime::LibTorch);
    CHECK(model->load_times().weight_bytes == 0);  // the library copied its own constants
    HostTensor input = ptb::test::npy_tensor(fixture("aoti/mlp_et.in0.npy"));
    HostTensor expected = ptb::test::npy_tensor(fixture("aoti/mlp_et.out0.npy"));
    auto outputs = model->run({input});  // the first call loads both cubins from the kernel folder
    REQUIRE_MESSAGE(outputs.ok(), outputs.error().message);
    REQUIRE(outputs->size() == 1);
    auto stats = compare_tensors(tensor_bytes((*outputs)[0]), tensor_bytes(expected), Tolerance{1e-7, 1e-5});
    REQUIRE_MESSAGE(stats.ok(), stats.error().message);
    CHECK_MESSAGE(stats->passed(), test_case_verdict("mlp_sm90", {{"output 0", {1e-7, 1e-5}, *stats, ""}}));
    std::printf("[gpu] mlp_sm90 (kernel files, weights in the library, LibTorch): max abs diff %.3g vs eager\n",
                stats->max_abs_error);
    // The kernel folder lives with the model...
    CHECK_FALSE(tmp.empty());
  }
  // ...and goes with it.
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
}

TEST_CASE("run on GPU: a bundle of mlp_sm90.pt2 verifies its test case and runs with --expect through the CLI") {
  PTB_REQUIRE_FIXTURES();
  if (!kLibTorchRunnerBuilt) {
    ptb::test::skip("built without LibTorch: mlp_sm90.pt2 is linked to it (the refusal is checked above)");
    return;
  }
  PTB_REQUIRE_GPU();
  TempDir dir;
  auto exported = export_cli(dir / "b", "mlp", fixture("aoti/mlp_sm90.pt2"));
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  auto verified = run_cli("verify " + quote(dir / "b") + " --json");
  CHECK_MESSAGE(verified.exit_code == 0, verified.out);
  CHECK(contains(verified.out, "\"testcase\""));
  auto ran = run_cli("run " + quote(dir / "b") + " --input 0=" + quote(fixture("aoti/mlp_et.in0.npy")) + " --expect 0=" +
                     quote(fixture("aoti/mlp_et.out0.npy")) + " --iterations 10");
  CHECK_MESSAGE(ran.exit_code == 0, (ran.out + ran.err));
}
