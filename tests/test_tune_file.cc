// The tune file's reader and writer (bundle/tune_file.h): what ptbundle tune
// writes reads back, and hostile content is refused with the file and the
// JSON path named, never a crash or an allocation sized by the file.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/tune_file.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;

namespace {

TuneFile sample() {
  TuneFile file;
  TuneGpu gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.sm = "sm_90";
  gpu.runtime = "built-in (CUDA runtime 13.0)";
  gpu.tuned = "2026-05-01T12:34:56Z";
  gpu.choices.push_back({"gemm", "m=512 n=64 k=256", "algo=" + std::string(128, 'a'), 130100});
  gpu.choices.push_back({"convolution", "dtype=6 x=1,3,224,224", "graph=12 route=cudnn", 91400});
  file.gpus.push_back(gpu);
  return file;
}

// Refused, naming the file and `where`.
void refused(const std::string& text, const std::string& where) {
  auto parsed = parse_tune_file(text, "b/tune.json");
  REQUIRE_FALSE(parsed.ok());
  CAPTURE(parsed.error().message);
  CHECK(contains(parsed.error().message, "b/tune.json"));
  CHECK(contains(parsed.error().message, where));
}

}  // namespace

TEST_CASE("tune file: what the writer writes reads back the same") {
  const TuneFile file = sample();
  auto back = parse_tune_file(tune_file_text(file), "tune.json");
  REQUIRE(back.ok());
  REQUIRE(back->gpus.size() == 1);
  CHECK(back->gpus[0].name == file.gpus[0].name);
  CHECK(back->gpus[0].sm == "sm_90");
  CHECK(back->gpus[0].choices == file.gpus[0].choices);
  CHECK(back->choice_count() == 2);
}

TEST_CASE("tune file: hostile content is refused with the file and the key named") {
  const nlohmann::json good = nlohmann::json::parse(tune_file_text(sample()));
  auto changed = [&](auto change) {
    nlohmann::json doc = good;
    change(doc);
    return doc.dump();
  };
  auto choice0 = [](nlohmann::json& d) -> nlohmann::json& { return d["gpus"][0]["choices"][0]; };
  refused("{not json", "b/tune.json");
  refused("[]", "top level");
  refused(changed([](auto& d) { d["format"] = "other"; }), "format");
  refused(changed([](auto& d) { d["format_version"] = 2; }), "format_version");
  refused(changed([](auto& d) { d["extra"] = 0; }), "unknown key");
  refused(changed([](auto& d) { d.erase("gpus"); }), "gpus");
  refused(changed([](auto& d) { d["gpus"][0]["sm"] = "90"; }), "gpus[0].sm");
  refused(changed([](auto& d) { d["gpus"][0]["sm"] = 90; }), "gpus[0].sm");
  refused(changed([&](auto& d) { choice0(d)["shim"] = "attention"; }), "gpus[0].choices[0].shim");
  refused(changed([&](auto& d) { choice0(d)["library"] = -1; }), "library");
  refused(changed([&](auto& d) { choice0(d)["library"] = 1e300; }), "library");
  refused(changed([&](auto& d) { choice0(d)["why"] = 1; }), "unknown key");
  refused(changed([&](auto& d) { choice0(d).erase("choice"); }), "choice");
  refused(changed([&](auto& d) { choice0(d)["key"] = std::string(kMaxTuneKeyBytes + 1, 'k'); }), "key");
  refused(changed([&](auto& d) { choice0(d)["key"] = ""; }), "key");
  refused(changed([&](auto& d) { choice0(d)["key"] = "m=\x01"; }), "not printable");
  refused(changed([&](auto& d) { choice0(d)["choice"] = nlohmann::json::array({1}); }), "choice");
  refused(changed([&](auto& d) { d["gpus"][0]["choices"].push_back(choice0(d)); }), "twice");
  refused(changed([](auto& d) { d["gpus"].push_back(d["gpus"][0]); }), "gpus[1]");
  // Deep nesting, then absurd sizes: refused before anything is built.
  refused(std::string(100000, '[') + std::string(100000, ']'), "b/tune.json");
  refused(std::string(kMaxTuneFileBytes + 1, ' '), "bytes");
  refused(changed([](auto& d) {
            for (size_t i = 0; i <= kMaxTuneGpus; ++i) {
              nlohmann::json gpu = d["gpus"][0];
              gpu["name"] = "GPU " + std::to_string(i);
              d["gpus"].push_back(gpu);
            }
          }),
          "gpus");
}

TEST_CASE("tune file: a GPU's new choices replace the same shim, key and library version and keep the rest") {
  TuneFile file = sample();
  TuneGpu update = sample().gpus[0];
  update.choices = {{"gemm", "m=512 n=64 k=256", "algo=" + std::string(128, 'b'), 130100},
                    {"gemm", "m=512 n=64 k=256", "algo=" + std::string(128, 'c'), 130200},
                    {"gemm", "m=1 n=1 k=1", "algo=" + std::string(128, 'd'), 130100}};
  add_tuned(file, update);
  REQUIRE(file.gpus.size() == 1);
  CHECK(file.gpus[0].choices.size() == 4);
  size_t replaced = 0;
  for (const TuneChoice& c : file.gpus[0].choices)
    if (c.key == "m=512 n=64 k=256" && c.library == 130100) replaced += c.choice == "algo=" + std::string(128, 'b');
  CHECK(replaced == 1);
  TuneGpu other = sample().gpus[0];
  other.name = "NVIDIA H200";
  add_tuned(file, other);
  CHECK(file.gpus.size() == 2);
  CHECK(parse_tune_file(tune_file_text(file), "tune.json").ok());
}

TEST_CASE("tune file: bundle.json's tune entry names tune.json or a generation of it, with its digest") {
  CHECK(is_tune_file_path("tune.json"));
  CHECK(is_tune_file_path(tune_file_path(1)));
  CHECK(tune_file_path(1) == "tune@1.json");
  CHECK_FALSE(is_tune_file_path("tune@0.json"));
  CHECK_FALSE(is_tune_file_path("tune@01.json"));
  CHECK_FALSE(is_tune_file_path("../tune.json"));
  CHECK_FALSE(is_tune_file_path("tune@1.json/x"));
  CHECK_FALSE(is_tune_file_path("sub/tune.json"));
  const std::string head = R"({"format": "ptbundle", "format_version": 1, "ptbundle_version": "0.1.0",
    "created": "2026-05-01T12:34:56Z", "parts": [], "tune": )";
  const std::string sha = std::string(64, 'a');
  auto good = parse_manifest(head + R"({"path": "tune@1.json", "size": 10, "sha256": ")" + sha + "\"}}", "bundle.json");
  REQUIRE(good.ok());
  REQUIRE(good->tune);
  CHECK(good->tune->path == "tune@1.json");
  for (const std::string& bad : std::vector<std::string>{R"({"path": "../x.json", "size": 1, "sha256": ")" + sha + "\"}",
                                std::string(R"({"path": "tune.json", "size": 1, "sha256": "AB"})"),
                                R"({"path": "tune.json", "size": -1, "sha256": ")" + sha + "\"}",
                                R"({"path": "tune.json", "size": 1, "sha256": ")" + sha + "\", \"more\": 1}"}) {
    auto parsed = parse_manifest(head + bad + "}", "bundle.json");
    CHECK_FALSE(parsed.ok());
    if (!parsed.ok()) CHECK(contains(parsed.error().message, "tune"));
  }
}
