// Statuses and messages that say what happened: options that take the
// arguments after them, outputs placed inside an input, a signature file that
// is there but wrong, sizes and signatures a wrapper source claims. Each input
// is built here from the real fixtures; the CLI runs as a child.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_child.h"
#include "pt2_zip.h"
#include "ptbundle/kernels/aoti_input_bounds.h"
#include "support.h"

using ptb::test::ChildOptions;
using ptb::test::contains;
using ptb::test::fixture;
using ptb::test::run_child;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A bundle of part enc from the fixture `folder` (sm80, sm90).
fs::path enc_bundle(const fs::path& dir, const std::string& name, const std::string& folder) {
  auto bundle = dir / name;
  auto made = run_child({"export", "-o", bundle.string(), "--part", "enc=" + fixture("cuda/" + folder + "/model.pte").string()});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return bundle;
}

void sign(const fs::path& dir, const fs::path& bundle) {
  auto signed_ = run_child({"sign", bundle.string(), "--key", (dir / "key.pem").string()});
  REQUIRE_MESSAGE(signed_.exit_code == 0, signed_.err);
}

}  // namespace

TEST_CASE("honest words: --key takes one value per flag; the paths after it stay paths") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::make_key_pair(dir.path());
  auto b1 = enc_bundle(dir.path(), "b1", "sm80");
  auto b2 = enc_bundle(dir.path(), "b2", "sm90");
  sign(dir.path(), b1);
  sign(dir.path(), b2);
  auto verified = run_child({"verify", "--key", (dir / "pub.pem").string(), b1.string(), b2.string(), "--gpu", "none"});
  CHECK_MESSAGE(verified.exit_code == 0, (verified.out + verified.err));
  CHECK_FALSE(contains(verified.out + verified.err, "is a folder"));
  CHECK(contains(verified.out, b1.string()));
  CHECK(contains(verified.out, b2.string()));
  // More keys: the flag again.
  auto two_keys = run_child({"verify", "--key", (dir / "pub.pem").string(), "--key", (dir / "pub.pem").string(),
                             b1.string(), "--gpu", "none"});
  CHECK_MESSAGE(two_keys.exit_code == 0, (two_keys.out + two_keys.err));
  // The same for merge's --key: the bundles after it are its inputs.
  auto merged = run_child({"merge", "-o", (dir / "m").string(), "--key", (dir / "pub.pem").string(), b1.string(), b2.string()});
  CHECK_MESSAGE(merged.exit_code == 0, (merged.out + merged.err));
  // And export's --part: one NAME=SOURCE per flag.
  auto exported = run_child({"export", "-o", (dir / "e").string(), "--part",
                             "a=" + fixture("cuda/sm80/model.pte").string(), "b=" + fixture("cuda/sm90/model.pte").string()});
  CHECK(exported.exit_code == 2);
}

TEST_CASE("honest words: merge refuses an output inside an input bundle, and changes nothing") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::make_key_pair(dir.path());
  auto a = enc_bundle(dir.path(), "a", "sm80");
  auto b = enc_bundle(dir.path(), "b", "sm90");
  sign(dir.path(), a);
  for (const fs::path& output : {a / "inner", a / "testcases" / "deeper", fs::path(b.string() + "/./x")}) {
    CAPTURE(output);
    auto merged = run_child({"merge", "-o", output.string(), a.string(), b.string()});
    CHECK(merged.exit_code == 2);
    CHECK_MESSAGE(contains(merged.err, "is inside the input bundle"), merged.err);
    CHECK_FALSE(fs::exists(output));
  }
  auto verified = run_child({"verify", a.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()});
  CHECK_MESSAGE(verified.exit_code == 0, verified.out);
  // Beside the inputs is fine.
  auto beside = run_child({"merge", "-o", (dir / "ab").string(), a.string(), b.string()});
  CHECK_MESSAGE(beside.exit_code == 0, beside.err);
}

TEST_CASE("honest words: a dim's bounds are the tightest its wrapper source and its library state") {
  ptb::AotiInputBounds source;
  source.dims.push_back({0, 0, 1, 2147483647});
  source.dims.push_back({1, 0, 2, std::nullopt});
  ptb::AotiInputBounds library;
  library.dims.push_back({0, 0, 2, 256});
  library.dims.push_back({2, 1, std::nullopt, 64});
  auto bounds = ptb::tightest_bounds(source, library);
  REQUIRE(bounds.dims.size() == 3);
  CHECK(ptb::bounds_text(*bounds.find(0, 0)) == "2..256");
  CHECK(ptb::bounds_text(*bounds.find(1, 0)) == "2..?");
  CHECK(ptb::bounds_text(*bounds.find(2, 1)) == "?..64");
}

TEST_CASE("honest words: a wrapper source whose bound would make a 128 GiB input is refused, naming the input") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto entries = ptb::test::mlp_entries();
  // The checks AOTInductor generates for a dynamic dim, with a bound no GPU
  // holds: mlp's input is float32 [4, 16].
  ptb::test::entry_ending(entries, ".wrapper.cpp")->bytes +=
      "\n        ss << \"input_handles[0]: dim value is too small at 0, \"\n"
      "           << \"expected it to be >= 2, \" << \"but got: \" << size << \"\\n\";\n"
      "        ss << \"input_handles[0]: dim value is too large at 0, \"\n"
      "           << \"expected to be <= 2147483647, \" << \"but got: \" << size << \"\\n\";\n";
  auto package = dir / "wide.pt2";
  ptb::test::write_zip(package, entries);
  auto exported = run_child({"export", "-o", (dir / "bundle").string(), "--part", "mlp=" + package.string(), "--example",
                             "mlp=" + fixture("aoti/mlp_et.in0.npy").string() + ":" + fixture("aoti/mlp_et.out0.npy").string()});
  CHECK(exported.exit_code == 1);
  CHECK_MESSAGE(contains(exported.err, "input 0 at its upper bounds [2147483647, 16] is 137438953408 bytes; expected at most 16 GiB"),
                exported.err);
  CHECK_FALSE(fs::exists(dir / "bundle" / "bundle.json"));
}

namespace {

// A .npy (version 1.0) of zeros: `descr` as numpy writes it ("<f4"), `shape`.
void write_npy(const fs::path& path, const std::string& descr, const std::vector<uint64_t>& shape, size_t element) {
  std::string dims;
  uint64_t count = 1;
  for (uint64_t size : shape) {
    dims += std::to_string(size) + ", ";
    count *= size;
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes += std::string(count * element, '\0');
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("honest words: a sampler's example inputs of another dtype or shape than the wrapper checks are refused") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  struct Case {
    std::string name, descr;
    std::vector<uint64_t> shape;
    size_t element;
    std::string said;
  };
  // mlp's wrapper checks float32 [4, 16].
  for (const Case& c : {Case{"f64", "<f8", {4, 16}, 8, "is float64 [4, 16]"}, Case{"i32", "<i4", {4, 16}, 4, "is int32 [4, 16]"},
                        Case{"small", "<f4", {3, 9}, 4, "is float32 [3, 9]"}, Case{"rank", "<f4", {4, 16, 1}, 4, "is float32 [4, 16, 1]"}}) {
    CAPTURE(c.name);
    auto npy = dir / (c.name + ".npy");
    write_npy(npy, c.descr, c.shape, c.element);
    for (const std::string& outputs : {std::string(":"), ":" + fixture("aoti/mlp_et.out0.npy").string()}) {
      auto exported = run_child({"export", "-o", (dir / ("b-" + c.name)).string(), "--part",
                                 "mlp=" + fixture("aoti/mlp_et.pt2").string(), "--example", "mlp=" + npy.string() + outputs});
      CHECK(exported.exit_code == 1);
      CHECK_MESSAGE(contains(exported.err, "input 0 (" + npy.string() + ") " + c.said), exported.err);
      CHECK(contains(exported.err, "wrapper source checks float32 [4, 16] there"));
      CHECK_FALSE(fs::exists(dir / ("b-" + c.name) / "bundle.json"));
    }
  }
  // The input it was compiled for passes.
  auto good = dir / "good.npy";
  write_npy(good, "<f4", {4, 16}, 4);
  auto exported = run_child({"export", "-o", (dir / "good").string(), "--part", "mlp=" + fixture("aoti/mlp_et.pt2").string(),
                             "--example", "mlp=" + good.string() + ":"});
  CHECK_MESSAGE(exported.exit_code == 0, exported.err);
}

TEST_CASE("honest words: a bundle.sig of 1 MB, or no Sigstore bundle, is named for what is wrong with it") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::make_key_pair(dir.path());
  auto bundle = enc_bundle(dir.path(), "b", "sm80");
  struct Case {
    std::string name, bytes, said;
  };
  const std::string media = "{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\"}";
  for (const Case& c : {Case{"large", media + std::string((1 << 20) + 1 - media.size(), ' '), "is 1048577 bytes; a signature file is at most 1048576 bytes"},
                        Case{"large", std::string(2 << 20, 'x'), "is 2097152 bytes; a signature file is at most 1048576 bytes"},
                        Case{"other", "{\"signature\": \"AAAA\"}", "is no Sigstore bundle"}}) {
    CAPTURE(c.said);
    std::ofstream(bundle / "bundle.sig", std::ios::binary) << c.bytes;
    for (bool keyed : {true, false}) {
      std::vector<std::string> args{"verify", bundle.string(), "--gpu", "none"};
      if (keyed) args.insert(args.end(), {"--key", (dir / "pub.pem").string()});
      auto verified = run_child(args);
      CHECK(verified.exit_code == 1);
      CHECK_MESSAGE(contains(verified.out, "bundle.sig: " + c.said), verified.out);
      CHECK_FALSE(contains(verified.out, "no .sig signature file"));
    }
  }
}
