// Programs without weights: a masked copy, a scatter or an
// index_put module has no constants, and AOTInductor packages it with an
// empty *_weights.blob. Export refused it; now export, verify and inspect
// take it, and a package whose wrapper declares constants still needs them.
// The packages are PyTorch's own: the weightless one made by
// tests/packages/make_packages.py where present, and mlp_et.pt2 with its
// blob emptied and its wrapper's constants taken out (pt2_zip.h).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "pt2_zip.h"
#include "support.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::quote;
using ptb::test::run_cli;
using ptb::test::TempDir;
using ptb::test::ZipEntry;

namespace {


// mlp_et.pt2 as a program without weights: the wrapper's constructor
// declares 0 constants and lists none, and the blob is empty (or absent).
std::vector<ZipEntry> without_weights(bool keep_blob) {
  std::vector<ZipEntry> entries = ptb::test::mlp_entries();
  std::vector<ZipEntry> out;
  for (auto& entry : entries) {
    if (entry.name.ends_with("_weights.blob")) {
      if (!keep_blob) continue;
      entry.bytes.clear();
    }
    if (entry.name.ends_with(".wrapper.cpp")) {
      std::string& text = entry.bytes;
      const std::regex base(R"(AOTInductorModelBase\((\s*1,\s*1,\s*)3,)");
      REQUIRE(std::regex_search(text, base));
      text = std::regex_replace(text, base, "AOTInductorModelBase($010,");
      text = std::regex_replace(text, std::regex(R"(\n\s*constants_info_\[[0-9]+\][^\n]*)"), "");
      REQUIRE_FALSE(contains(text, "constants_info_["));
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string example() {
  return quote(fixture("aoti/mlp_et.in0.npy")) + ":" + quote(fixture("aoti/mlp_et.out0.npy"));
}

}  // namespace

TEST_CASE("weightless: the wrapper's declared constant count tells a program without weights") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::write_zip(dir / "weightless.pt2", without_weights(true));
  auto package = Pt2Package::open((dir / "weightless.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  const Pt2Model& model = package->models().front();
  auto needed = pt2_needed_weights_bytes(*package, model);
  REQUIRE(needed.ok());
  REQUIRE(needed->has_value());
  CHECK(**needed == 0);
  CHECK(check_cuda_package_model(*package, model, /*read_through=*/true).ok());

  // The real package declares 3 constants of 3200 bytes: an empty blob is refused, saying so.
  std::vector<ZipEntry> emptied = ptb::test::mlp_entries();
  ptb::test::entry_ending(emptied, "_weights.blob")->bytes.clear();
  ptb::test::write_zip(dir / "emptied.pt2", emptied);
  auto bad = Pt2Package::open((dir / "emptied.pt2").string());
  REQUIRE(bad.ok());
  auto refused = check_cuda_package_model(*bad, bad->models().front(), false);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "is empty; the model's wrapper source declares constants of 3200 bytes"));
}

TEST_CASE("weightless: export, verify and inspect a program without weights") {
  PTB_REQUIRE_FIXTURES();
  for (bool keep_blob : {true, false}) {
    CAPTURE(keep_blob);
    TempDir dir;
    ptb::test::write_zip(dir / "masked.pt2", without_weights(keep_blob));
    const std::string package = quote(dir / "masked.pt2");

    auto checked = run_cli("verify " + package + " --gpu sm_90 --verbose");
    CHECK_MESSAGE(checked.exit_code == 0, (checked.out + checked.err));
    if (!keep_blob) CHECK(contains(checked.out, "no weights (the program declares no constants)"));

    auto bundle = dir / "bundle";
    auto exported = run_cli("export -o " + quote(bundle) + " --json --part masked=" + package + " --example masked=" + example());
    REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
    auto report = nlohmann::json::parse(exported.out);
    CHECK(contains(report["parts"][0]["notes"].dump(), "the program has no weights"));

    // The data file keeps the single-blob payload's weights key, with no bytes.
    auto data = PtdFile::open((bundle / "masked.ptd").string());
    REQUIRE_MESSAGE(data.ok(), data.error().message);
    REQUIRE(data->entries().size() == 1);
    CHECK(data->entries()[0].key.ends_with("_weights_blob"));
    CHECK(data->entries()[0].size == 0);
    // bundle.json says so, which is what lets verify take the empty blob.
    auto json = nlohmann::json::parse(ptb::test::read_text(bundle / "bundle.json"));
    CHECK(json["parts"][0]["cuda"]["weights"] == "none");

    auto verified = run_cli("verify " + quote(bundle) + " --gpu sm_90 --json");
    CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
    if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("verify", verified.out) == "");
    auto inspected = run_cli("inspect --json " + quote(bundle));
    CHECK_MESSAGE(inspected.exit_code == 0, inspected.err);
    if (ptb::test::have_jsonschema()) CHECK(ptb::test::schema_problem("inspect", inspected.out) == "");
    auto inspect_text = run_cli("inspect " + quote(bundle / "masked.ptd"));
    CHECK_MESSAGE(inspect_text.exit_code == 0, inspect_text.err);
  }
}

TEST_CASE("weightless: PyTorch's own weightless package (tests/packages)") {
  const auto here = std::filesystem::path(__FILE__).parent_path() / "packages";
  if (!std::filesystem::exists(here / "weightless.pt2")) {
    ptb::test::skip("tests/packages/weightless.pt2 is absent (tests/packages/make_packages.py makes it on a GPU machine)");
    return;
  }
  TempDir dir;
  auto bundle = dir / "bundle";
  auto exported = run_cli("export -o " + quote(bundle) + " --part w=" + quote(here / "weightless.pt2") + " --example w=" +
                          quote(here / "weightless.in0.npy") + "," + quote(here / "weightless.in1.npy") + ":" +
                          quote(here / "weightless.out0.npy"));
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  auto verified = run_cli("verify " + quote(bundle) + " --gpu sm_90");
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  auto inspected = run_cli("inspect " + quote(bundle));
  CHECK_MESSAGE(inspected.exit_code == 0, inspected.err);
}
