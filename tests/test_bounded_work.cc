// Work bounded by what the input is, not by what it claims: a small .pt2 that
// inflates to gigabytes, a compression method that inflates slowly, a
// wrapper source that makes each output's search cost the whole text again,
// files whose sizes the manifest contradicts or that it does not list. Each
// input is built here; the CLI runs as a child with a time limit.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_child.h"
#include "pt2_zip.h"
#include "ptbundle/formats/pt2.h"
#include "support.h"

using namespace ptb;
using ptb::test::ChildOptions;
using ptb::test::contains;
using ptb::test::entry_ending;
using ptb::test::fixture;
using ptb::test::mlp_entries;
using ptb::test::run_child;
using ptb::test::TempDir;
using ptb::test::write_zip;
using ptb::test::ZipEntry;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> mlp_export_args(const fs::path& bundle, const fs::path& package) {
  return {"export", "-o", bundle.string(), "--part", "mlp=" + package.string(), "--example",
          "mlp=" + fixture("aoti/mlp_et.in0.npy").string() + ":" + fixture("aoti/mlp_et.out0.npy").string()};
}

}  // namespace

TEST_CASE("bounded work: the inflate bound is 1 GiB plus 32 times the package's size") {
  CHECK(pt2_inflate_bound(0) == (1ull << 30));
  CHECK(pt2_inflate_bound(4 << 20) == (1ull << 30) + (128ull << 20));
  CHECK(pt2_inflate_bound(UINT64_MAX / 2) == UINT64_MAX);
}

TEST_CASE("bounded work: a .pt2 whose library deflates from megabytes to past the bound is refused before it is inflated") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto entries = mlp_entries();
  // An ELF header and then zeros: the scanners' "is it a library" test passes.
  ZipEntry* library = entry_ending(entries, ".wrapper.so");
  library->bytes = library->bytes.substr(0, 64);
  library->zeros = (5ull << 30) / 4;
  auto bomb = dir / "bomb.pt2";
  write_zip(bomb, entries);
  const uint64_t size = fs::file_size(bomb);
  MESSAGE("[bounds] deflate bomb: " << size << " bytes, the library inflating to 1.25 GiB; bound " << pt2_inflate_bound(size));
  REQUIRE(library->bytes.size() + library->zeros > pt2_inflate_bound(size));

  // Temporary files stay under the bound too: one larger would kill the
  // command with SIGXFSZ (exit 153).
  ChildOptions options;
  options.file_size_limit = pt2_inflate_bound(size);
  options.env["TMPDIR"] = dir.path().string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", bomb.string()}, {"inspect", "--sha256", bomb.string()},
        {"verify", bomb.string(), "--gpu", "none"}, mlp_export_args(dir / "bundle", bomb)}) {
    CAPTURE(args[0]);
    auto result = run_child(args, options);
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 1);
    const std::string said = result.out + result.err;
    CHECK_MESSAGE(contains(said, ".wrapper.so': inflates to"), said);
    CHECK(contains(said, "1 GiB plus 32 times the package's size"));
  }
}

TEST_CASE("bounded work: a .pt2 entry compressed with bzip2 is refused at open, naming the entry and the method") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto entries = mlp_entries();
  entry_ending(entries, ".wrapper.cpp")->method = ZIP_CM_BZIP2;
  auto package = dir / "bzip2.pt2";
  write_zip(package, entries);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"inspect", package.string()},
                                               {"verify", package.string(), "--gpu", "none"},
                                               mlp_export_args(dir / "bundle", package)}) {
    CAPTURE(args[0]);
    auto result = run_child(args);
    CHECK(result.exit_code == 1);
    const std::string said = result.out + result.err;
    CHECK_MESSAGE(contains(said, ".wrapper.cpp': compressed with bzip2 (ZIP method 12)"), said);
    CHECK(contains(said, "expected stored (0) or deflate (8)"));
  }
}

TEST_CASE("bounded work: a sampler's wrapper source of 4,096 outputs and long move chains is read once, not once per hop") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  // Every output comes from buf0, which the text moves from buf1 and back,
  // with the moves at the end of 600 KB: a search per hop would read the
  // text 10,000 times per output.
  std::string source = "AOTInductorModelBase(1, 4096, 3, \"cuda\")\n";
  for (int i = 0; i < 4096; ++i) source += "output_handles[" + std::to_string(i) + "] = buf0.release();\n";
  source += std::string(600 << 10, ' ') + "\n";
  source += "auto buf0 = std::move(buf1);\nauto buf1 = std::move(buf0);\n";
  auto entries = mlp_entries();
  entry_ending(entries, ".wrapper.cpp")->bytes = source;
  auto package = dir / "sampler.pt2";
  write_zip(package, entries);
  ChildOptions options;
  options.timeout_seconds = 60;
  auto result = run_child({"export", "-o", (dir / "bundle").string(), "--part", "mlp=" + package.string(), "--example",
                           "mlp=" + fixture("aoti/mlp_et.in0.npy").string() + ":"},
                          options);
  CHECK_FALSE(result.timed_out);
  CHECK(result.exit_code == 1);
  CHECK_MESSAGE(contains(result.err, "does not allocate output 0 with constant sizes"), result.err);
}

// A 64 GiB sparse file: reading it through would take a minute or more; the
// children below are given 15 s, so a command that hashes it fails here.
TEST_CASE("bounded work: verify reports an unlisted sparse file without hashing it; sign compares sizes before hashing") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  ptb::test::make_key_pair(dir.path());
  auto bundle = dir / "bundle";
  REQUIRE(run_child(ptb::test::enc_export_args(bundle)).exit_code == 0);
  ChildOptions quick;
  quick.timeout_seconds = 15;
  {
    // Unsigned: neither bundle.json nor a signature lists it.
    std::ofstream(bundle / "planted.ptd").close();
    REQUIRE(::truncate((bundle / "planted.ptd").c_str(), off_t{64} << 30) == 0);
    auto verified = run_child({"verify", bundle.string(), "--gpu", "none"}, quick);
    CHECK_FALSE(verified.timed_out);
    CHECK(verified.exit_code == 1);
    CHECK_MESSAGE(contains(verified.out, "planted.ptd"), verified.out);
    CHECK(contains(verified.out, "bundle.json does not list it"));
    fs::remove(bundle / "planted.ptd");
  }
  {
    // Signed, then a file added: not in the signature, said without its digest.
    auto signed_ = run_child({"sign", bundle.string(), "--key", (dir / "key.pem").string()});
    REQUIRE_MESSAGE(signed_.exit_code == 0, signed_.err);
    std::ofstream(bundle / "notes.bin").close();
    REQUIRE(::truncate((bundle / "notes.bin").c_str(), off_t{64} << 30) == 0);
    auto verified = run_child({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()}, quick);
    CHECK_FALSE(verified.timed_out);
    CHECK(verified.exit_code == 1);
    CHECK_MESSAGE(contains(verified.out, "notes.bin"), verified.out);
    CHECK(contains(verified.out, "not in the signature"));
    fs::remove(bundle / "notes.bin");
    fs::remove(bundle / "bundle.sig");
  }
  {
    // A listed file grown to 64 GiB: sign refuses by its size.
    REQUIRE(::truncate((bundle / "enc.ptd").c_str(), off_t{64} << 30) == 0);
    auto signed_ = run_child({"sign", bundle.string(), "--key", (dir / "key.pem").string()}, quick);
    CHECK_FALSE(signed_.timed_out);
    CHECK(signed_.exit_code == 1);
    CHECK_MESSAGE(contains(signed_.err, "enc.ptd: is 68719476736 bytes; bundle.json records"), signed_.err);
    CHECK_FALSE(fs::exists(bundle / "bundle.sig"));
  }
}
