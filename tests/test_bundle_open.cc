// The bundle opener (bundle/bundle.h): one rule for what a bundle and a part
// are, so that run, verify, inspect and merge give a bad bundle the same
// verdict (exit code and cause), and run gives it before it looks for a GPU.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/formats/file_kind.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {


// A bundle of one part, "enc", exported from a real CUDA export.
void export_bundle(const fs::path& bundle, const std::string& program) {
  auto exported = run_cli("export -o " + quote(bundle) + " --part enc=" + quote(fixture(program)));
  REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
}

// bundle.json's size and SHA-256 of `relative` made those of the file now
// there, so that only what the test changed is wrong.
void relist(const fs::path& bundle, const std::string& relative) {
  auto manifest = read_manifest(bundle.string());
  REQUIRE_MESSAGE(manifest.ok(), manifest.error().message);
  auto file = MappedFile::open((bundle / relative).string());
  REQUIRE(file.ok());
  for (ManifestPart& part : manifest->parts) {
    for (ManifestFile& listed : part.files) {
      if (listed.path != relative) continue;
      listed.size = file->size();
      listed.sha256 = *sha256_file_range(*file, 0, file->size());
    }
  }
  REQUIRE(write_manifest(bundle.string(), *manifest).ok());
}

struct Row {
  std::string name;
  fs::path folder;
  std::string cause;  // empty: a good bundle
};

}  // namespace

TEST_CASE("bundle open: file kinds are told by bytes, the same for every command") {
  PTB_REQUIRE_FIXTURES();
  auto kind_of = [](const fs::path& path) {
    auto file = MappedFile::open(path.string());
    REQUIRE_MESSAGE(file.ok(), file.error().message);
    return detect_file_kind(*file);
  };
  CHECK(*kind_of(fixture("executorch/add.pte")) == FileKind::Pte);
  CHECK(*kind_of(fixture("executorch/bundled_program.bpte")) == FileKind::Bpte);
  CHECK(*kind_of(fixture("cuda/sm80/aoti_cuda_blob.ptd")) == FileKind::Ptd);
  CHECK(*kind_of(fixture("aoti/mlp_et.pt2")) == FileKind::Pt2);
  auto npy = kind_of(fixture("aoti/mlp_et.in0.npy"));
  REQUIRE_FALSE(npy.ok());
  CHECK(contains(npy.error().message, "not a .pte, .ptd, .bpte or .pt2 file"));

  // A program under another name is still a program.
  TempDir dir;
  fs::copy_file(fixture("executorch/add.pte"), dir / "add.bin");
  CHECK(*kind_of(dir / "add.bin") == FileKind::Pte);
  CHECK(std::string(file_kind_name(FileKind::Bundle)) == "bundle");

  auto input = open_input_path(dir.path().string());
  REQUIRE_FALSE(input.ok());
  CHECK(input.error().kind == ErrorKind::Invalid);
  CHECK(contains(input.error().message, "folder without bundle.json"));
}

TEST_CASE("bundle open: a part's files are opened inside the folder and read through the checked descriptor") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = dir / "b";
  export_bundle(bundle, "cuda/sm80/model.pte");
  auto opened = Bundle::open(bundle.string());
  REQUIRE_MESSAGE(opened.ok(), opened.error().message);
  CHECK(opened->manifest().parts.size() == 1);
  auto part = opened->open_part("");
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  CHECK(part->entry->name == "enc");
  REQUIRE(part->programs.size() == 1);
  CHECK(part->programs[0].path == "enc.pte");
  CHECK_FALSE(part->per_target());
  REQUIRE(part->data);
  CHECK(part->programs[0].program->ptd() == part->data.get());
  CHECK(part->data->path() == (bundle / "enc.ptd").string());

  // The data file swapped for a link after it was opened: what was opened is
  // what is read, never the file the link leads to.
  const std::vector<uint8_t> before(part->data->file().bytes().begin(), part->data->file().bytes().end());
  fs::rename(bundle / "enc.ptd", dir / "moved.ptd");
  {
    std::ofstream secret(dir / "secret");
    secret << "SECRET";
  }
  fs::create_symlink(dir / "secret", bundle / "enc.ptd");
  const auto after = part->data->file().bytes();
  CHECK(std::equal(before.begin(), before.end(), after.begin(), after.end()));
  auto again = opened->open_part("enc");
  REQUIRE_FALSE(again.ok());
  CHECK(contains(again.error().message, (bundle / "enc.ptd").string() + ": is a symbolic link"));

  auto unknown = opened->open_part("dec");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().kind == ErrorKind::Usage);
  CHECK(contains(unknown.error().message, "no part 'dec'; the bundle has parts enc"));
}

TEST_CASE("bundle open: run, verify, inspect and merge give each bad bundle the same verdict") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path good = dir / "good";
  const fs::path other = dir / "other";  // the second input of every merge
  export_bundle(good, "cuda/sm80/model.pte");
  export_bundle(other, "cuda/sm90/model.pte");
  auto copy_of_good = [&](const std::string& name) {
    fs::path folder = dir / name;
    fs::copy(good, folder, fs::copy_options::recursive);
    return folder;
  };

  std::vector<Row> rows;
  rows.push_back({"good", good, ""});
  {
    fs::path folder = copy_of_good("no_manifest");
    fs::remove(folder / "bundle.json");
    rows.push_back({"no bundle.json", folder, folder.string() + ": folder without bundle.json"});
  }
  {
    // A BundledProgram in the program's place, listed with its own size and
    // digest: only its kind is wrong.
    fs::path folder = copy_of_good("bpte_part");
    fs::remove(folder / "enc.pte");
    fs::copy_file(fixture("executorch/bundled_program.bpte"), folder / "enc.pte");
    relist(folder, "enc.pte");
    rows.push_back({".bpte part", folder, (folder / "enc.pte").string() + ": is an ExecuTorch BundledProgram (.bpte)"});
  }
  {
    // The program a link to a good copy outside: following it would work, and must not happen.
    fs::path folder = copy_of_good("symlinked_part");
    fs::create_directories(dir / "outside");
    fs::rename(folder / "enc.pte", dir / "outside" / "enc.pte");
    fs::create_symlink(dir / "outside" / "enc.pte", folder / "enc.pte");
    rows.push_back({"symlinked part", folder, (folder / "enc.pte").string() + ": is a symbolic link"});
  }
  {
    fs::path folder = copy_of_good("missing_data");
    fs::remove(folder / "enc.ptd");
    rows.push_back({"part missing its data", folder,
                    (folder / "enc.ptd").string() + ": missing: bundle.json lists it as the part's data file"});
  }

  const bool no_gpu = discover_gpus().gpus.empty();
  int merged = 0;
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const std::string folder = quote(row.folder);
    auto verified = run_cli("verify " + folder + " --gpu none");
    auto inspected = run_cli("inspect " + folder);
    auto mergeout = dir / ("merged" + std::to_string(merged++));
    auto merged_result = run_cli("merge -o " + quote(mergeout) + " " + folder + " " + quote(other));
    auto ran = run_cli("run " + folder + " --iterations 0");

    if (row.cause.empty()) {
      CHECK_MESSAGE(verified.exit_code == 0, verified.out);
      CHECK_MESSAGE(inspected.exit_code == 0, inspected.err);
      CHECK_MESSAGE(merged_result.exit_code == 0, merged_result.err);
      // A good bundle gets as far as this machine allows.
      if (!kRunnerBuilt) {
        CHECK(ran.exit_code == 2);
        CHECK(contains(ran.err, runner_unavailable_reason()));
      } else if (no_gpu) {
        CHECK(ran.exit_code == 1);
        CHECK_MESSAGE(contains(ran.err, "no CUDA GPU"), ran.err);
      }
      continue;
    }
    for (const auto& [command, result] : std::vector<std::pair<std::string, const ptb::test::CommandResult*>>{
             {"run", &ran}, {"verify", &verified}, {"inspect", &inspected}, {"merge", &merged_result}}) {
      CAPTURE(command);
      CHECK(result->exit_code == 1);
      CHECK_MESSAGE(contains(result->out + result->err, row.cause), (result->out + result->err));
    }
    // The input's verdict comes before any question about the machine.
    CHECK_FALSE(contains(ran.err, "no CUDA GPU"));
    CHECK_FALSE(contains(ran.err, "needs the CUDA toolkit"));
    CHECK_FALSE(fs::exists(mergeout));
  }
}

TEST_CASE("bundle open: a .bpte on its own is read by run as by verify and inspect") {
  PTB_REQUIRE_FIXTURES();
  const std::string bpte = quote(fixture("executorch/bundled_program.bpte"));
  CHECK(run_cli("verify " + bpte + " --gpu none").exit_code == 0);
  CHECK(run_cli("inspect " + bpte).exit_code == 0);
  // Its program is opened and judged: a portable program, which run cannot run.
  auto ran = run_cli("run " + bpte + " --iterations 0");
  CHECK(ran.exit_code == 1);
  CHECK_MESSAGE(contains(ran.err, "has no CudaBackend delegate"), ran.err);
  CHECK_FALSE(contains(ran.err, "no CUDA GPU"));
}
