// Hostile inputs, hostile file systems and interruptions: nothing
// crashes, hangs, escapes the bundle folder, or loses a part. The CLI runs as
// a child with a time limit (a hang is a failure, not a stuck test) and its
// peak memory is read from wait4's rusage.
#include <fcntl.h>
#include <cerrno>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <nlohmann/json.hpp>
#include <thread>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/mapping_guard.h"
#include "ptbundle/base/sha256.h"
#include "pt2_zip.h"
#include "race_loop.h"
#include "cli_child.h"
#include "support.h"
#include "ptbundle/bundle/manifest_json.h"

using namespace ptb;
using ptb::test::fixture;
using ptb::test::contains;
using ptb::test::flip_byte;
using ptb::test::rewrite_manifest_digests;
using ptb::test::quote;
using ptb::test::RaceLoop;
using ptb::test::TempDir;
using ptb::test::entry_ending;
using ptb::test::mlp_entries;
using ptb::test::write_zip;
using ptb::test::ZipEntry;
namespace fs = std::filesystem;

namespace {

using Child = ptb::test::ChildResult;
using Running = ptb::test::CliChild;

Child run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}, int timeout = 60) {
  ptb::test::ChildOptions options;
  options.env = env;
  options.timeout_seconds = timeout;
  return ptb::test::run_child(args, options);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::vector<std::string> export_args(const fs::path& bundle, const std::string& part, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"export", "-o", bundle.string(), "--part", part + "=" + fixture("cuda/sm80/model.pte").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(fs::relative(it->path(), dir).string());
  std::sort(names.begin(), names.end());
  return names;
}

bool any_temporary(const fs::path& dir) {
  for (const auto& name : names_in(dir))
    if (is_temporary_name(fs::path(name).filename().string())) return true;
  return false;
}


// dir/key.pem and dir/pub.pem, a P-256 pair.
void make_key_pair(const fs::path& dir) {
  REQUIRE(std::system(("openssl ecparam -genkey -name prime256v1 -noout -out " + quote(dir / "key.pem") +
                       " 2>/dev/null && openssl ec -in " + quote(dir / "key.pem") + " -pubout -out " +
                       quote(dir / "pub.pem") + " 2>/dev/null").c_str()) == 0);
}

std::vector<std::string> mlp_export_args(const fs::path& bundle, const fs::path& package) {
  return {"export", "-o", bundle.string(), "--part", "mlp=" + package.string(), "--example",
          "mlp=" + fixture("aoti/mlp_et.in0.npy").string() + ":" + fixture("aoti/mlp_et.out0.npy").string()};
}

}  // namespace

TEST_CASE("hostile: a manifest nested 100,000 levels is refused with a clear error, no crash") {
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto parsed = parse_manifest(deep, "bundle.json");
  REQUIRE_FALSE(parsed.ok());
  CHECK(contains(parsed.error().message, "nested more than 64 levels"));

  for (const std::string& text : {deep, R"({"format":"ptbundle","parts":)" + deep + "}"}) {
    auto bundle = dir / "deep";
    fs::create_directories(bundle);
    std::ofstream(bundle / "bundle.json") << text;
    for (const char* command : {"verify", "inspect"}) {
      auto child = run({command, bundle.string(), "--gpu", "none"}, {}, 30);
      if (std::string(command) == "inspect") child = run({command, bundle.string()}, {}, 30);
      CHECK_FALSE(child.timed_out);
      CHECK_MESSAGE(child.exit_code == 1, command << ": " << child.err << child.out);
      CHECK(contains(child.err + child.out, "nested more than 64 levels"));
    }
  }
}

TEST_CASE("hostile: a 50 MB string in bundle.json is cut in the message") {
  TempDir dir;
  auto bundle = dir / "long";
  fs::create_directories(bundle);
  std::ofstream(bundle / "bundle.json") << R"({"format":")" << std::string(50 << 20, 'x') << R"(","parts":[]})";
  auto child = run({"verify", bundle.string(), "--gpu", "none"}, {}, 60);
  CHECK(child.exit_code == 1);
  CHECK(contains(child.out + child.err, "... (52428800 bytes)"));
  CHECK(child.out.size() + child.err.size() < 20000);
}

TEST_CASE("hostile: verify is linear in the number of parts (1,000 parts)") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "many";
  fs::create_directories(bundle);
  auto program = fixture("executorch/add.pte");
  auto mapped = MappedFile::open(program.string());
  REQUIRE(mapped.ok());
  const std::string digest = *sha256_file_range(*mapped, 0, mapped->size());
  Manifest manifest;
  manifest.ptbundle_version = "test";
  manifest.created = utc_now_iso8601();
  for (int i = 0; i < 1000; ++i) {
    std::string name = "p" + std::to_string(i);
    fs::copy_file(program, bundle / (name + ".pte"));
    ManifestPart part;
    part.name = name;
    part.source.kind = "executorch";
    part.files.push_back({FileRole::Program, name + ".pte", mapped->size(), digest});
    manifest.parts.push_back(std::move(part));
  }
  REQUIRE(write_manifest(bundle.string(), manifest).ok());
  auto start = std::chrono::steady_clock::now();
  auto child = run({"verify", bundle.string(), "--gpu", "none"}, {}, 120);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("[hostile] verify of 1,000 parts: " << seconds << " s, peak RSS " << child.peak_rss_kib / 1024 << " MiB");
  CHECK_MESSAGE(child.exit_code == 0, child.out.substr(0, 2000));
  CHECK(seconds < 10);
}

// Memory that shows a 2 GiB entry was streamed, not inflated whole. Under
// AddressSanitizer the same run peaks near 630 MiB: its quarantine keeps
// 256 MiB of freed buffers, and shadow memory comes on top.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kBoundedRssKib = 1024 * 1024;
#else
constexpr long kBoundedRssKib = 256 * 1024;
#endif

TEST_CASE("hostile: a zip bomb is streamed with bounded memory") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto entries = mlp_entries();
  // The library inflates to 2 GiB of zeros from a few megabytes.
  ZipEntry* library = entry_ending(entries, ".wrapper.so");
  library->bytes.clear();
  library->zeros = 2ull << 30;
  auto bomb = dir / "bomb.pt2";
  write_zip(bomb, entries);
  MESSAGE("[hostile] zip bomb: " << fs::file_size(bomb) << " bytes inflating past 2 GiB");

  auto inspect = run({"inspect", "--sha256", bomb.string()}, {}, 300);
  MESSAGE("[hostile] inspect --sha256 of the bomb: exit " << inspect.exit_code << ", peak RSS " << inspect.peak_rss_kib / 1024 << " MiB");
  CHECK_FALSE(inspect.timed_out);
  CHECK(inspect.exit_code < 128);
  CHECK(inspect.peak_rss_kib < kBoundedRssKib);

  auto verify = run({"verify", bomb.string(), "--gpu", "none"}, {}, 300);
  MESSAGE("[hostile] verify of the bomb: exit " << verify.exit_code << ", peak RSS " << verify.peak_rss_kib / 1024 << " MiB");
  CHECK_FALSE(verify.timed_out);
  CHECK(verify.exit_code < 128);
  CHECK(verify.peak_rss_kib < kBoundedRssKib);
}

TEST_CASE("hostile: verify refuses a .pt2 that export refuses (CRC, truncated weights)") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  {
    // A stored library with one byte flipped: its CRC-32 no longer matches.
    auto entries = mlp_entries();
    entry_ending(entries, ".wrapper.so")->stored = true;
    auto package = dir / "crc.pt2";
    write_zip(package, entries);
    std::string bytes = ptb::test::read_text(package);
    auto at = bytes.find("\x7f" "ELF");
    REQUIRE(at != std::string::npos);
    bytes[at + 100000] ^= 0x5a;
    std::ofstream(package, std::ios::binary) << bytes;
    auto exported = run(mlp_export_args(dir / "b1", package));
    CHECK(exported.exit_code == 1);
    CHECK(contains(exported.err, "CRC-32"));
    auto verified = run({"verify", package.string(), "--gpu", "none"});
    CHECK(verified.exit_code == 1);
    CHECK(contains(verified.out, "CRC-32"));
  }
  for (size_t keep : {size_t{0}, size_t{100}}) {
    auto entries = mlp_entries();
    ZipEntry* blob = entry_ending(entries, "_weights.blob");
    blob->bytes.resize(keep);
    auto package = dir / ("short" + std::to_string(keep) + ".pt2");
    write_zip(package, entries);
    auto exported = run(mlp_export_args(dir / ("b" + std::to_string(keep)), package));
    CHECK_MESSAGE(exported.exit_code == 1, exported.err);
    CHECK(contains(exported.err, keep == 0 ? "is empty" : "truncated"));
    auto verified = run({"verify", package.string(), "--gpu", "none"});
    CHECK(verified.exit_code == 1);
    CHECK(contains(verified.out, keep == 0 ? "is empty" : "truncated"));
  }
}

TEST_CASE("hostile: two exports racing into one bundle keep both parts") {
  PTB_REQUIRE_FIXTURES();
  RaceLoop loop("two exports racing", 3);
  while (loop.next()) {
    CAPTURE(loop.round());
    TempDir dir;
    auto bundle = dir / "bundle";
    Running a(export_args(bundle, "first"));
    std::this_thread::sleep_for(loop.delay(std::chrono::milliseconds(20)));
    Running b(export_args(bundle, "second"));
    auto ra = a.wait();
    auto rb = b.wait();
    loop.outcome(ra.exit_code == 0 && rb.exit_code == 0 ? "both exported" : "an export failed");
    CHECK_MESSAGE(ra.exit_code == 0, ra.err);
    CHECK_MESSAGE(rb.exit_code == 0, rb.err);
    auto manifest = read_manifest(bundle.string());
    REQUIRE(manifest.ok());
    CHECK(manifest->find_part("first"));
    CHECK(manifest->find_part("second"));
    CHECK(run({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
  }
  // A writer that cannot get the lock in time says so.
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "first")).exit_code == 0);
  int fd = ::open((bundle / kLockFileName).c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  auto blocked = run(export_args(bundle, "second"), {{"PTBUNDLE_LOCK_WAIT", "1"}});
  ::close(fd);
  CHECK(blocked.exit_code == 3);
  CHECK(contains(blocked.err, "another process is changing this bundle"));
  CHECK(contains(blocked.err, "held by pid " + std::to_string(::getpid())));
}

TEST_CASE("hostile: an export killed at each step leaves the previous bundle verifying, and the next export cleans up") {
  PTB_REQUIRE_FIXTURES();
  for (const std::string step : {"journal", "rename-1", "rename-2", "manifest", "cleanup"}) {
    CAPTURE(step);
    TempDir dir;
    auto bundle = dir / "bundle";
    REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
    auto before = read_manifest(bundle.string());
    REQUIRE(before.ok());
    // Replace enc (two files: program and data).
    std::vector<std::string> args = export_args(bundle, "enc", {"--force"});
    auto killed = run(args, {{"PTB_TEST_KILL_AT", step}});
    CHECK(killed.exit_code == 128 + SIGKILL);
    auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json"});
    CHECK_MESSAGE(verified.exit_code == 0, verified.out);
    CHECK(contains(verified.out, "\"leftover\""));  // named, as warnings
    CHECK(contains(verified.out, "\"warn\""));
    auto after = read_manifest(bundle.string());
    REQUIRE(after.ok());
    if (step != "cleanup") CHECK(manifest_to_json(*after) == manifest_to_json(*before));

    auto next = run(export_args(bundle, "other"));
    CHECK_MESSAGE(next.exit_code == 0, next.err);
    CHECK_FALSE(any_temporary(bundle));
    CHECK_FALSE(fs::exists(bundle / kJournalFileName));
    auto clean = run({"verify", bundle.string(), "--gpu", "none", "--json"});
    CHECK(clean.exit_code == 0);
    CHECK_FALSE(contains(clean.out, "\"warn\""));
  }
}

TEST_CASE("hostile: SIGINT and SIGTERM during an export leave no temporary files") {
  PTB_REQUIRE_FIXTURES();
  for (const char* signal_name : {"INT", "TERM"}) {
    TempDir dir;
    auto bundle = dir / "bundle";
    REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
    auto killed = run(mlp_export_args(bundle, fixture("aoti/mlp_et.pt2")),
                      {{"PTB_TEST_KILL_AT", "rename-2"}, {"PTB_TEST_KILL_SIGNAL", signal_name}});
    // The signal came during the commit, which completed: the export succeeded.
    CHECK(killed.exit_code == 0);
    CHECK(contains(killed.err, "arrived during the commit, which completed first: the change is in place"));
    CHECK_FALSE(any_temporary(bundle));
    CHECK(run({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
  }
}

TEST_CASE("hostile: FIFOs are refused without a hang") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto fifo = dir / "fifo.pte";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto npy_fifo = dir / "fifo.npy";
  REQUIRE(::mkfifo(npy_fifo.c_str(), 0644) == 0);
  auto pt2_fifo = dir / "fifo.pt2";
  REQUIRE(::mkfifo(pt2_fifo.c_str(), 0644) == 0);

  auto refused = [&](const std::vector<std::string>& args) {
    CAPTURE(args[0]);
    auto child = run(args, {}, 20);
    CHECK_FALSE(child.timed_out);
    CHECK(child.exit_code != 0);
    CHECK(child.exit_code < 128);
    return child;
  };
  auto as_input = refused({"export", "-o", (dir / "b1").string(), "--part", "x=" + fifo.string()});
  CHECK(contains(as_input.err, "FIFO"));
  refused({"export", "-o", (dir / "b2").string(), "--part", "x=" + pt2_fifo.string(), "--example", "x=" + npy_fifo.string() + ":" + npy_fifo.string()});
  refused({"export", "-o", (dir / "b3").string(), "--part", "mlp=" + fixture("aoti/mlp_et.pt2").string(), "--example",
           "mlp=" + npy_fifo.string() + ":" + fixture("aoti/mlp_et.out0.npy").string()});
  refused({"verify", fifo.string(), "--gpu", "none"});
  refused({"verify", pt2_fifo.string(), "--gpu", "none"});
  refused({"inspect", fifo.string()});
  refused({"run", fifo.string()});

  // Inside a bundle: the data file, and bundle.json itself.
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  fs::remove(bundle / "enc.ptd");
  REQUIRE(::mkfifo((bundle / "enc.ptd").c_str(), 0644) == 0);
  auto verify = refused({"verify", bundle.string(), "--gpu", "none"});
  CHECK(contains(verify.out, "FIFO"));
  refused({"inspect", bundle.string()});
  refused({"run", bundle.string()});
  fs::remove(bundle / "bundle.json");
  REQUIRE(::mkfifo((bundle / "bundle.json").c_str(), 0644) == 0);
  refused({"verify", bundle.string(), "--gpu", "none"});
  refused(export_args(bundle, "more"));
  refused({"merge", "-o", (dir / "merged").string(), bundle.string(), bundle.string()});
}

TEST_CASE("hostile: symlinks inside a bundle are neither read nor written through") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "encoder")).exit_code == 0);
  // A secret beside the bundle, reached by a link in place of the data file.
  auto secret = dir / "secret";
  std::ofstream(secret) << "root:SECRET-CONTENT:0:0\n";
  fs::remove(bundle / "encoder.ptd");
  fs::create_symlink(secret, bundle / "encoder.ptd");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"verify", bundle.string(), "--gpu", "none"}, {"inspect", bundle.string()}, {"run", bundle.string()}}) {
    auto child = run(args, {}, 30);
    CAPTURE(args[0]);
    // run too: it opens its input before it looks for a GPU.
    CHECK(child.exit_code == 1);
    CHECK(contains(child.out + child.err, (bundle / "encoder.ptd").string() + ": is a symbolic link"));
    CHECK_FALSE(contains(child.out + child.err, "no CUDA GPU"));
    CHECK_FALSE(contains(child.out + child.err, "SECRET"));
  }

  // testcases -> a folder outside: export refuses to write through it.
  auto outside = dir / "outside";
  fs::create_directories(outside);
  auto second = dir / "second";
  fs::create_directories(second);
  fs::create_directory_symlink(outside, second / "testcases");
  auto exported = run(mlp_export_args(second, fixture("aoti/mlp_et.pt2")));
  CHECK(exported.exit_code != 0);
  CHECK(contains(exported.err, "symbolic link"));
  CHECK(fs::is_empty(outside));

  // bundle.json as a link: replaced by the export, never written through.
  auto third = dir / "third";
  REQUIRE(run(export_args(third, "a")).exit_code == 0);
  auto target = dir / "target.json";
  fs::copy_file(third / "bundle.json", target);
  const std::string original = ptb::test::read_text(target);
  fs::remove(third / "bundle.json");
  fs::create_symlink(target, third / "bundle.json");
  auto linked = run(export_args(third, "b"));
  CHECK(linked.exit_code != 0);  // the manifest is not read through the link either
  CHECK(ptb::test::read_text(target) == original);
}

TEST_CASE("hostile: --atol nan and inf are refused before anything is written") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  for (const char* value : {"nan", "inf", "-1"}) {
    auto args = mlp_export_args(dir / "bundle", fixture("aoti/mlp_et.pt2"));
    args.push_back("--atol");
    args.push_back(value);
    auto child = run(args);
    CAPTURE(value);
    CHECK(child.exit_code == 2);
    CHECK_FALSE(fs::exists(dir / "bundle" / "bundle.json"));
  }
}

TEST_CASE("hostile: a bfloat16 .npy saved by ml_dtypes (<V2) reads as bfloat16") {
  std::string header = "{'descr': '<V2', 'fortran_order': False, 'shape': (2, 3), }";
  header.resize(128 - 10 - 1, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file += std::string(12, '\0');
  auto parsed = parse_npy_header(Bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size()), "x.npy");
  REQUIRE_MESSAGE(parsed.ok(), parsed.error().message);
  CHECK(parsed->scalar_type == 15);
  CHECK(parsed->element_size == 2);
  CHECK(parsed->data_size == 12);
}

TEST_CASE("hostile: an interrupted merge leaves its staging folder only until the next merge, SIGINT none at all") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto a = dir / "a";
  auto b = dir / "b";
  REQUIRE(run({"export", "-o", a.string(), "--part", "enc=" + fixture("cuda/sm80/model.pte").string()}).exit_code == 0);
  REQUIRE(run({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  auto staging_folders = [&] {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir.path()))
      n += entry.path().filename().string().starts_with(".out.merge-");
    return n;
  };
  std::vector<std::string> merge{"merge", "-o", (dir / "out").string(), a.string(), b.string()};
  auto interrupted = run(merge, {{"PTB_TEST_KILL_AT", "merge-rename"}, {"PTB_TEST_KILL_SIGNAL", "INT"}});
  CHECK(interrupted.exit_code == 128 + SIGINT);
  CHECK(staging_folders() == 0);
  CHECK_FALSE(fs::exists(dir / "out"));

  auto killed = run(merge, {{"PTB_TEST_KILL_AT", "merge-rename"}});
  CHECK(killed.exit_code == 128 + SIGKILL);
  CHECK(staging_folders() == 1);
  auto done = run(merge);
  CHECK_MESSAGE(done.exit_code == 0, done.err);
  CHECK(staging_folders() == 0);
  CHECK(run({"verify", (dir / "out").string(), "--gpu", "none"}).exit_code == 0);
}

TEST_CASE("hostile: merge never removes, and verify never names, a user's folder that looks like a staging folder") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto a = dir / "a";
  auto b = dir / "b";
  REQUIRE(run({"export", "-o", a.string(), "--part", "enc=" + fixture("cuda/sm80/model.pte").string()}).exit_code == 0);
  REQUIRE(run({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  // A user's notes, one under a name only mkdtemp's pattern would give, and
  // one with a marker but under a name mkdtemp never makes.
  for (const char* name : {".out.merge-notes", ".out.merge-AbC123", ".out.merge-x"}) {
    fs::create_directories(dir / name);
    write_text(dir / name / "notes.txt", "mine\n");
  }
  write_text(dir / ".out.merge-x" / kStagingMarkerName, kStagingMarkerText);
  auto merged = run({"merge", "-o", (dir / "out").string(), a.string(), b.string()});
  CHECK_MESSAGE(merged.exit_code == 0, merged.err);
  for (const char* name : {".out.merge-notes", ".out.merge-AbC123", ".out.merge-x"}) {
    CAPTURE(name);
    CHECK(fs::exists(dir / name / "notes.txt"));
  }
  CHECK_FALSE(fs::exists(dir / "out" / kStagingMarkerName));
  auto verified = run({"verify", (dir / "out").string(), "--gpu", "none", "--json"});
  CHECK_MESSAGE(verified.exit_code == 0, verified.out);
  CHECK_FALSE(contains(verified.out, ".out.merge-"));
}

TEST_CASE("hostile: a mapped file that shrinks reads as zeros, is named as changed, and nothing made from it is committed") {
  // Whatever happens below, the rest of this process is not taken for one
  // that read a changed file.
  struct Forget {
    ~Forget() { forget_changed_mapped_files(); }
  } forget;
  TempDir dir;
  auto path = dir / "shrinks.bin";
  write_text(path, std::string(64 << 10, 'x'));
  auto file = MappedFile::open(path.string());
  REQUIRE(file.ok());
  REQUIRE(::truncate(path.c_str(), 4096) == 0);
  // Past the new end: without the guard, SIGBUS.
  CHECK(file->bytes()[file->size() - 1] == 0);
  // The hasher reads with pread, so the cut is an error, not a digest of zeros.
  auto digest = sha256_file_range(*file, 0, file->size());
  REQUIRE_FALSE(digest.ok());
  CHECK(contains(digest.error().message, path.string() + ": the file ended at offset 4096"));
  auto status = check_unchanged(*file);
  REQUIRE_FALSE(status.ok());
  CHECK(contains(status.error().message, path.string() + ": changed while being read"));
  REQUIRE(changed_mapped_file().has_value());
  CHECK(*changed_mapped_file() == path.string());
  {
    auto out = AtomicOutput::create((dir / "made.bin").string());
    REQUIRE(out.ok());
    REQUIRE(out->write(file->bytes().subspan(0, 16)).ok());
    auto committed = out->commit();
    CHECK_FALSE(committed.ok());
    if (!committed.ok()) CHECK(contains(committed.error().message, "changed while being read"));
  }
  CHECK_FALSE(fs::exists(dir / "made.bin"));
  CHECK(names_in(dir.path()) == std::vector<std::string>{"shrinks.bin"});
  file = MappedFile();
  forget_changed_mapped_files();
  CHECK_FALSE(changed_mapped_file().has_value());
}

TEST_CASE("hostile: a file that shrinks right after it is mapped crashes no command; each names it, --json gives one document") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto pristine = dir / "pristine";
  auto other = dir / "other";
  REQUIRE(run({"export", "-o", pristine.string(), "--part", "enc=" + fixture("cuda/sm80/model.pte").string()}).exit_code == 0);
  REQUIRE(run({"export", "-o", other.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  REQUIRE(std::system(("openssl ecparam -genkey -name prime256v1 -noout -out " + quote(dir / "key.pem") + " 2>/dev/null").c_str()) == 0);
  auto fresh = [&](const fs::path& to) {
    fs::remove_all(to);
    fs::copy(pristine, to, fs::copy_options::recursive);
    return to.string();
  };
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string shrinks;
  };
  fs::copy_file(fixture("cuda/sm80/model.pte"), dir / "input.pte");
  std::vector<Case> cases{
      {"inspect", {"inspect", fresh(dir / "b1"), "--json"}, "enc.pte"},
      {"verify", {"verify", fresh(dir / "b2"), "--gpu", "none", "--json"}, "enc.pte"},
      {"verify data", {"verify", fresh(dir / "b3"), "--gpu", "none", "--json"}, "enc.ptd"},
      {"sign", {"sign", fresh(dir / "b4"), "--key", (dir / "key.pem").string(), "--json"}, "bundle.json"},
      {"merge", {"merge", "-o", (dir / "merged").string(), fresh(dir / "b5"), other.string(), "--json"}, "enc.ptd"},
      {"export", {"export", "-o", (dir / "exported").string(), "--part", "enc=" + (dir / "input.pte").string(), "--json"},
       "input.pte"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto child = run(c.args, {{"PTB_TEST_SHRINK_AFTER_MAP", c.shrinks}});
    CHECK(child.exit_code != 128 + SIGBUS);
    CHECK(child.exit_code == 3);
    CHECK_MESSAGE(contains(child.err, "changed while being read"), child.err);
    CHECK(contains(child.err, c.shrinks));
    CHECK(nlohmann::json::accept(child.out));
  }
  CHECK_FALSE(fs::exists(dir / "merged"));
  CHECK_FALSE(fs::exists(dir / "exported" / "bundle.json"));
  CHECK_FALSE(fs::exists(dir / "b4" / "bundle.sig"));
}

namespace {

bool bundle_is_clean(const fs::path& bundle) {
  return !fs::exists(bundle / kLockFileName) && !fs::exists(bundle / kJournalFileName) && !any_temporary(bundle);
}

}  // namespace

TEST_CASE("hostile: SIGINT or SIGTERM at any step of an export's commit leaves no lock, journal or temporary file") {
  PTB_REQUIRE_FIXTURES();
  for (const std::string step : {"journal", "rename-1", "rename-2", "manifest", "cleanup"}) {
    for (const char* signal_name : {"INT", "TERM"}) {
      CAPTURE(step);
      CAPTURE(signal_name);
      TempDir dir;
      auto bundle = dir / "bundle";
      REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
      auto killed = run(export_args(bundle, "enc", {"--force"}), {{"PTB_TEST_KILL_AT", step}, {"PTB_TEST_KILL_SIGNAL", signal_name}});
      // Held back until the commit completed: the export succeeded, and says so.
      CHECK(killed.exit_code == 0);
      CHECK(contains(killed.err, "SIG" + std::string(signal_name) + " arrived during the commit"));
      CHECK_MESSAGE(bundle_is_clean(bundle), ptb::test::quote(bundle));
      auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json"});
      CHECK_MESSAGE(verified.exit_code == 0, verified.out);
      CHECK_FALSE(contains(verified.out, "\"warn\""));
    }
  }
}

TEST_CASE("hostile: a signal (SIGINT SIGTERM SIGHUP) at a random moment of an export, merge or sign leaves a verifying bundle and nothing behind") {
  PTB_REQUIRE_FIXTURES();
  struct Signal {
    const char* name;
    int number;
  };
  const Signal signals[] = {{"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}, {"SIGHUP", SIGHUP}};
  const char* commands[] = {"export", "merge", "sign"};
  RaceLoop loop("a signal at a random moment of export, merge or sign", 9);
  while (loop.next()) {
    const Signal signal = signals[loop.round() % 3];
    const std::string command = commands[(loop.round() / 3) % 3];
    CAPTURE(loop.round());
    CAPTURE(signal.name);
    CAPTURE(command);
    TempDir dir;
    make_key_pair(dir.path());
    auto bundle = dir / "bundle";
    auto other = dir / "other";
    auto merged = dir / "merged";
    REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
    std::vector<std::string> args;
    if (command == "export") args = mlp_export_args(bundle, fixture("aoti/mlp_et.pt2"));
    if (command == "merge") {
      REQUIRE(run({"export", "-o", other.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
      args = {"merge", "-o", merged.string(), bundle.string(), other.string()};
    }
    if (command == "sign") args = {"sign", bundle.string(), "--key", (dir / "key.pem").string()};
    Running child(args);
    std::this_thread::sleep_for(loop.delay(std::chrono::milliseconds(command == "export" ? 300 : 100)));
    ::kill(child.pid(), signal.number);
    auto done = child.wait();
    loop.outcome(command + (done.exit_code == 0 ? " finished" : " interrupted"));
    CHECK((done.exit_code == 0 || done.exit_code == 128 + signal.number));
    CHECK(bundle_is_clean(bundle));
    CHECK_FALSE(any_temporary(dir.path()));
    for (const auto& entry : fs::directory_iterator(dir.path()))
      CHECK_MESSAGE(!entry.path().filename().string().starts_with(".merged.merge-"), entry.path());
    auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json"});
    CHECK_MESSAGE(verified.exit_code == 0, verified.out);
    CHECK_FALSE(contains(verified.out, "\"warn\""));
    if (command == "sign" && fs::exists(bundle / "bundle.sig"))
      CHECK(run({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()}).exit_code == 0);
    if (command == "merge" && fs::exists(merged)) {
      auto merged_verified = run({"verify", merged.string(), "--gpu", "none", "--json"});
      CHECK_MESSAGE(merged_verified.exit_code == 0, merged_verified.out);
    }
  }
}

TEST_CASE("hostile: a bundle file cut short at a random moment of verify, inspect or merge crashes nothing; --json gives one document") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto pristine = dir / "pristine";
  auto other = dir / "other";
  REQUIRE(run(mlp_export_args(pristine, fixture("aoti/mlp_et.pt2"))).exit_code == 0);
  REQUIRE(run(mlp_export_args(other, fixture("aoti/mlp_et.pt2"))).exit_code == 0);
  RaceLoop loop("a file cut short while verify, inspect or merge reads it", 6);
  while (loop.next()) {
    CAPTURE(loop.round());
    auto bundle = dir / "bundle";
    auto merged = dir / "merged";
    fs::remove_all(bundle);
    fs::remove_all(merged);
    fs::copy(pristine, bundle, fs::copy_options::recursive);
    std::vector<std::string> args;
    switch (loop.round() % 3) {
      case 0: args = {"verify", bundle.string(), "--gpu", "none", "--json"}; break;
      case 1: args = {"inspect", bundle.string(), "--json"}; break;
      default: args = {"merge", "-o", merged.string(), bundle.string(), other.string(), "--json"}; break;
    }
    CAPTURE(args[0]);
    Running child(args);
    std::this_thread::sleep_for(loop.delay(std::chrono::milliseconds(25)));
    // Cut in place (the mapping sees it), not replaced by a rename.
    REQUIRE(::truncate((bundle / "mlp.pte").c_str(), 4096) == 0);
    auto done = child.wait();
    loop.outcome(args[0] + " exit " + std::to_string(done.exit_code));
    CHECK_MESSAGE((done.exit_code == 0 || done.exit_code == 1 || done.exit_code == 3), done.err);
    CHECK_MESSAGE(nlohmann::json::accept(done.out), done.out);
    CHECK_FALSE(any_temporary(dir.path()));
    if (args[0] == "merge" && fs::exists(merged)) {
      // A merge that finished before the cut made its bundle from whole inputs.
      CHECK(run({"verify", merged.string(), "--gpu", "none"}).exit_code == 0);
    }
  }
}

TEST_CASE("hostile: a commit that fails (a folder squats the new file's name) leaves the old bundle and no journal") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  const std::string before = ptb::test::read_text(bundle / "bundle.json");
  fs::create_directory(bundle / "other.pte");
  auto failed = run(export_args(bundle, "other", {"--force"}));
  CHECK(failed.exit_code == 3);
  CHECK(contains(failed.err, "other.pte"));
  CHECK(bundle_is_clean(bundle));
  CHECK_FALSE(fs::exists(bundle / "other.ptd"));
  CHECK(ptb::test::read_text(bundle / "bundle.json") == before);
}

// A fixture export as merge takes it: "model.pte,aoti_cuda_blob.ptd" of cuda/<folder>.
std::string export_pair(const std::string& folder) {
  fs::path path = fixture("cuda/" + folder);
  return (path / "model.pte").string() + "," + (path / "aoti_cuda_blob.ptd").string();
}

TEST_CASE("hostile: merge -o m.pte --output-data m.ptd interrupted between the two renames leaves both new, not a torn pair") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  std::vector<std::string> merge{"merge", "-o", (dir / "m.pte").string(), "--output-data", (dir / "m.ptd").string(),
                                 export_pair("sm80"), export_pair("sm90")};
  REQUIRE(run(merge).exit_code == 0);
  const auto clean_pte = ptb::test::read_bytes(dir / "m.pte");
  const auto clean_ptd = ptb::test::read_bytes(dir / "m.ptd");
  for (const char* signal_name : {"INT", "TERM"}) {
    CAPTURE(signal_name);
    write_text(dir / "m.pte", "old program");
    write_text(dir / "m.ptd", "old data");
    auto killed = run(merge, {{"PTB_TEST_KILL_AT", "merge-pair"}, {"PTB_TEST_KILL_SIGNAL", signal_name}});
    CHECK(killed.exit_code == 128 + (std::string(signal_name) == "INT" ? SIGINT : SIGTERM));
    CHECK(ptb::test::read_bytes(dir / "m.pte") == clean_pte);
    CHECK(ptb::test::read_bytes(dir / "m.ptd") == clean_ptd);
    CHECK_FALSE(any_temporary(dir.path()));
  }
}

TEST_CASE("hostile: merge -o m.pte --output-data m.ptd killed between the two renames is named by verify and finished by the next merge") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path pte = dir / "m.pte", ptd = dir / "m.ptd", journal = dir / ".m.pte.ptbundle-pair";
  std::vector<std::string> merge{"merge", "-o", pte.string(), "--output-data", ptd.string(), export_pair("sm80"), export_pair("sm90")};
  REQUIRE(run(merge).exit_code == 0);
  const auto clean_pte = ptb::test::read_bytes(pte);
  const auto clean_ptd = ptb::test::read_bytes(ptd);
  auto kill_between_renames = [&] {
    // An older, valid pair in place first: one export's program and data.
    fs::copy_file(fixture("cuda/sm80/model.pte"), pte, fs::copy_options::overwrite_existing);
    fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), ptd, fs::copy_options::overwrite_existing);
    fs::permissions(pte, fs::perms::owner_write, fs::perm_options::add);
    fs::permissions(ptd, fs::perms::owner_write, fs::perm_options::add);
    auto killed = run(merge, {{"PTB_TEST_KILL_AT", "merge-pair"}});
    REQUIRE(killed.exit_code == 128 + SIGKILL);
    REQUIRE(fs::exists(journal));
    CHECK(ptb::test::read_bytes(ptd) == clean_ptd);   // the data file was renamed
    CHECK(ptb::test::read_bytes(pte) != clean_pte);   // the program was not
  };

  SUBCASE("verify names the interrupted merge") {
    kill_between_renames();
    auto verified = run({"verify", pte.string() + "," + ptd.string(), "--gpu", "none"});
    CHECK(verified.exit_code == 1);
    CHECK(contains(verified.out, "a merge was interrupted between writing " + ptd.string()));
    CHECK(contains(verified.out, journal.string()));
  }
  SUBCASE("the next merge finishes it first, even when that merge fails") {
    kill_between_renames();
    std::vector<std::string> failing = merge;
    write_text(dir / "junk.pte", "not a program");
    write_text(dir / "junk.ptd", "not data");
    failing.back() = (dir / "junk.pte").string() + "," + (dir / "junk.ptd").string();
    auto failed = run(failing);
    CHECK(failed.exit_code != 0);
    CHECK(contains(failed.err, "finished an interrupted merge: " + pte.string() + " now matches " + ptd.string()));
    CHECK(ptb::test::read_bytes(pte) == clean_pte);
    CHECK(ptb::test::read_bytes(ptd) == clean_ptd);
    CHECK_FALSE(fs::exists(journal));
    CHECK_FALSE(any_temporary(dir.path()));
    CHECK(run({"verify", pte.string() + "," + ptd.string(), "--gpu", "none"}).exit_code == 0);
  }
  SUBCASE("a journal ptbundle did not write is refused, naming it, and renames nothing") {
    write_text(journal, "ptbundle merge pair 1\nprogram ../../etc/passwd\ndata x\n");
    auto refused = run(merge);
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, journal.string()));
    CHECK(contains(refused.err, "not a merge journal ptbundle wrote"));
    CHECK(ptb::test::read_bytes(pte) == clean_pte);
  }
}

TEST_CASE("hostile: with stdout closed, export, sign and merge refuse before changing anything") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto closed = [&](const std::vector<std::string>& args) {
    std::string line = "exec >&- 2>" + quote(dir / "err") + "; " + quote(PTB_CLI_PATH);
    for (const auto& arg : args) line += " " + quote(arg);
    int status = std::system(line.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  auto bundle = dir / "bundle";
  CHECK(closed(export_args(bundle, "enc")) == 3);
  CHECK(contains(ptb::test::read_text(dir / "err"), "stdout"));
  CHECK_FALSE(fs::exists(bundle / "bundle.json"));
  CHECK_FALSE(fs::exists(bundle / "enc.pte"));

  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  REQUIRE(std::system(("openssl ecparam -genkey -name prime256v1 -noout -out " + quote(dir / "key.pem") + " 2>/dev/null").c_str()) == 0);
  CHECK(closed({"sign", bundle.string(), "--key", (dir / "key.pem").string()}) == 3);
  CHECK_FALSE(fs::exists(bundle / "bundle.sig"));
  auto other = dir / "other";
  REQUIRE(run({"export", "-o", other.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  CHECK(closed({"merge", "-o", (dir / "merged").string(), bundle.string(), other.string(), "--json"}) == 3);
  CHECK_FALSE(fs::exists(dir / "merged"));
  // Nothing of ptbundle's own went to descriptor 1 either.
  CHECK(bundle_is_clean(bundle));
}

TEST_CASE("hostile: a merged bundle folder gets the mode an exported one gets") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto a = dir / "a";
  auto b = dir / "b";
  REQUIRE(run({"export", "-o", a.string(), "--part", "enc=" + fixture("cuda/sm80/model.pte").string()}).exit_code == 0);
  REQUIRE(run({"export", "-o", b.string(), "--part", "enc=" + fixture("cuda/sm90/model.pte").string()}).exit_code == 0);
  auto merged = run({"merge", "-o", (dir / "out").string(), a.string(), b.string()});
  REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
  struct stat exported {}, made {};
  REQUIRE(::stat(a.c_str(), &exported) == 0);
  REQUIRE(::stat((dir / "out").c_str(), &made) == 0);
  CHECK((made.st_mode & 07777) == (exported.st_mode & 07777));
}

TEST_CASE("hostile: sign --output into a bundle signed already is refused; verify without a key says the signer is only claimed") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  REQUIRE(std::system(("openssl ecparam -genkey -name prime256v1 -noout -out " + quote(dir / "key.pem") +
                       " 2>/dev/null && openssl ec -in " + quote(dir / "key.pem") + " -pubout -out " +
                       quote(dir / "pub.pem") + " 2>/dev/null").c_str()) == 0);
  REQUIRE(run({"sign", bundle.string(), "--key", (dir / "key.pem").string()}).exit_code == 0);
  auto second = run({"sign", bundle.string(), "--key", (dir / "key.pem").string(), "--output", "alt.sig"});
  CHECK(second.exit_code == 1);
  CHECK(contains(second.err, "bundle.sig"));
  CHECK_FALSE(fs::exists(bundle / "alt.sig"));
  CHECK(run({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()}).exit_code == 0);
  // Signing into the same file again is fine.
  CHECK(run({"sign", bundle.string(), "--key", (dir / "key.pem").string(), "--output", "bundle.sig"}).exit_code == 0);

  auto unkeyed = run({"verify", bundle.string(), "--gpu", "none"});
  CHECK(unkeyed.exit_code == 0);
  CHECK_FALSE(contains(unkeyed.out, ": signed by the key"));
  CHECK(contains(unkeyed.out, "claims to be signed by the key with fingerprint"));
  CHECK(contains(unkeyed.out, "not checked: no key given"));

  // bundle.sig as a link to a good signature outside: never read, so the
  // bundle is unsigned to verify --key, and sign does not see it either.
  fs::rename(bundle / "bundle.sig", dir / "outside.sig");
  fs::create_symlink(dir / "outside.sig", bundle / "bundle.sig");
  auto linked = run({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string(), "--json"});
  CHECK(linked.exit_code == 1);
  CHECK(contains(linked.out, "not signed: no .sig signature file"));
  CHECK_FALSE(contains(linked.out, "verified with"));
}

TEST_CASE("hostile: a sparse 1 TiB data file that bundle.json records as smaller is refused without being hashed") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  REQUIRE(::truncate((bundle / "enc.ptd").c_str(), off_t{1} << 40) == 0);
  const auto start = std::chrono::steady_clock::now();
  auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json"}, {}, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(verified.exit_code == 1);
  CHECK(contains(verified.out, "1099511627776 bytes; bundle.json records"));
  CHECK(nlohmann::json::accept(verified.out));
  // Hashing it took ~30 s (15 s per 512 GiB of holes); comparing sizes, milliseconds.
  CHECK_MESSAGE(seconds < 5, seconds);
}

// ---- journals, tampered inputs, readers and writers ----

namespace {

// A bundle of part enc from the fixture `folder` (sm80, sm90), signed with dir/key.pem when `sign`.
fs::path signed_enc_bundle(const fs::path& dir, const std::string& name, const std::string& folder, bool sign) {
  auto bundle = dir / name;
  auto made = run({"export", "-o", bundle.string(), "--part", "enc=" + fixture("cuda/" + folder + "/model.pte").string()});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  if (sign) {
    auto signed_ = run({"sign", bundle.string(), "--key", (dir / "key.pem").string()});
    REQUIRE_MESSAGE(signed_.exit_code == 0, signed_.err);
  }
  return bundle;
}

}  // namespace

TEST_CASE("hostile: a hand-written journal never excuses a planted program; it explains only its own export's files") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);
  fs::copy_file(fixture("executorch/add.pte"), bundle / "evil.pte");
  auto planted = run({"verify", bundle.string(), "--gpu", "none"});
  CHECK(planted.exit_code == 1);
  CHECK(contains(planted.out, "evil.pte"));

  // The journal names it: still a failure, and the journal's claim is named.
  write_text(bundle / kJournalFileName, "ptbundle pending 1\nevil.pte\n");
  auto excused = run({"verify", bundle.string(), "--gpu", "none", "--json"});
  CHECK_MESSAGE(excused.exit_code == 1, excused.out);
  auto json = nlohmann::json::parse(excused.out);
  CHECK_FALSE(json["ok"].get<bool>());
  bool unlisted = false;
  for (const auto& check : json["checks"]) {
    if (check["check"] == "unlisted_file" && check["status"] == "fail" && contains(check["subject"], "evil.pte")) unlisted = true;
  }
  CHECK(unlisted);
  CHECK(contains(excused.out, "a journal only explains files its own export wrote"));

  // A file of a listed part under another generation, as a replacement killed
  // before its commit leaves it: a leftover (warned), not a failure.
  fs::remove(bundle / "evil.pte");
  fs::copy_file(bundle / "enc.pte", bundle / "enc@1.pte");
  write_text(bundle / kJournalFileName, "ptbundle pending 1\nenc@1.pte\n");
  auto replaced = run({"verify", bundle.string(), "--gpu", "none", "--json"});
  CHECK_MESSAGE(replaced.exit_code == 0, replaced.out);
  CHECK(contains(replaced.out, "\"leftover\""));
  // Without the journal's word it is unlisted.
  fs::remove(bundle / kJournalFileName);
  CHECK(run({"verify", bundle.string(), "--gpu", "none"}).exit_code == 1);

  // The next writer removes what a journal named, explained or not.
  write_text(bundle / kJournalFileName, "ptbundle pending 1\nenc@1.pte\nnew.pte\n");
  fs::copy_file(fixture("executorch/add.pte"), bundle / "new.pte");
  CHECK(run(export_args(bundle, "other")).exit_code == 0);
  CHECK_FALSE(fs::exists(bundle / "enc@1.pte"));
  CHECK_FALSE(fs::exists(bundle / "new.pte"));
  CHECK(bundle_is_clean(bundle));
  CHECK(run({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
}

TEST_CASE("hostile: merge refuses tampered input bundles instead of laundering them into a clean one") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_key_pair(dir.path());
  auto merge = [&](const fs::path& a, const fs::path& b, const std::vector<std::string>& extra = {}) {
    fs::remove_all(dir / "out");
    std::vector<std::string> args{"merge", "-o", (dir / "out").string(), a.string(), b.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  SUBCASE("a weight byte changed after signing, in both bundles") {
    auto a = signed_enc_bundle(dir.path(), "a", "sm80", true);
    auto b = signed_enc_bundle(dir.path(), "b", "sm90", true);
    for (const auto& bundle : {a, b}) {
      auto ptd = PtdFile::open((bundle / "enc.ptd").string());
      REQUIRE(ptd.ok());
      flip_byte(bundle / "enc.ptd", ptd->entries().front().file_offset);
    }
    CHECK(run({"verify", a.string(), "--gpu", "none"}).exit_code == 1);
    auto merged = merge(a, b);
    CHECK(merged.exit_code == 1);
    CHECK(contains(merged.err, (a / "enc.ptd").string()));
    CHECK(contains(merged.err, "changed after export"));
    CHECK_FALSE(fs::exists(dir / "out"));
    // bundle.json rewritten to match: the signature, even unkeyed, still lists the old bytes.
    rewrite_manifest_digests(a);
    rewrite_manifest_digests(b);
    merged = merge(a, b);
    CHECK(merged.exit_code == 1);
    CHECK(contains(merged.err, "enc.ptd"));
    CHECK(contains(merged.err, "changed after signing"));
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  SUBCASE("a library swapped under its content-addressed key, bundle.json rewritten, unsigned") {
    auto a = signed_enc_bundle(dir.path(), "a", "sm80", false);
    auto b = signed_enc_bundle(dir.path(), "b", "sm90", false);
    auto keys = content_keys_of((a / "enc.pte").string());
    REQUIRE(keys.size() == 1);
    flip_byte(a / "enc.pte", keys[0].offset + keys[0].size / 2);
    rewrite_manifest_digests(a);
    auto merged = merge(a, b);
    CHECK(merged.exit_code == 1);
    CHECK(contains(merged.err, (a / "enc.pte").string()));
    CHECK(contains(merged.err, keys[0].key));
    CHECK_FALSE(fs::exists(dir / "out"));
  }
  SUBCASE("with --key: unsigned inputs are refused, signed ones merge, and the merge verifies") {
    auto a = signed_enc_bundle(dir.path(), "a", "sm80", true);
    auto b = signed_enc_bundle(dir.path(), "b", "sm90", false);
    auto merged = merge(a, b, {"--key", (dir / "pub.pem").string()});
    CHECK(merged.exit_code == 1);
    CHECK(contains(merged.err, b.string()));
    CHECK(contains(merged.err, "not signed"));
    REQUIRE(run({"sign", b.string(), "--key", (dir / "key.pem").string()}).exit_code == 0);
    merged = merge(a, b, {"--key", (dir / "pub.pem").string()});
    CHECK_MESSAGE(merged.exit_code == 0, merged.err);
    CHECK(run({"verify", (dir / "out").string(), "--gpu", "none"}).exit_code == 0);
  }
}

TEST_CASE("hostile: export, and merge of .pte files, refuse a library that does not hash to its content-addressed key") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  fs::copy_file(fixture("cuda/sm80/model.pte"), dir / "model.pte");
  fs::copy_file(fixture("cuda/sm80/aoti_cuda_blob.ptd"), dir / "aoti_cuda_blob.ptd");
  auto keys = content_keys_of((dir / "model.pte").string());
  REQUIRE(keys.size() == 1);
  flip_byte(dir / "model.pte", keys[0].offset + keys[0].size / 2);
  auto bundle = dir / "bundle";
  auto exported = run({"export", "-o", bundle.string(), "--part", "enc=" + (dir / "model.pte").string()});
  CHECK(exported.exit_code == 1);
  CHECK(contains(exported.err, (dir / "model.pte").string()));
  CHECK(contains(exported.err, keys[0].key));
  CHECK(contains(exported.err, "hash to"));
  CHECK_FALSE(fs::exists(bundle / "bundle.json"));
  CHECK_FALSE(fs::exists(bundle / "enc.pte"));
  // Merging .pte files names each library anew by its bytes: refused, not given a matching key.
  const fs::path sm90 = fixture("cuda/sm90");
  auto merged = run({"merge", "-o", (dir / "m.pte").string(), "--output-data", (dir / "m.ptd").string(),
                     (dir / "model.pte").string() + "," + (dir / "aoti_cuda_blob.ptd").string(),
                     (sm90 / "model.pte").string() + "," + (sm90 / "aoti_cuda_blob.ptd").string()});
  CHECK(merged.exit_code == 1);
  CHECK(contains(merged.err, keys[0].key));
  CHECK_FALSE(fs::exists(dir / "m.pte"));
}

TEST_CASE("hostile: export refuses a data file whose weights do not hash to their content-addressed key") {
  // export checks the data file's keys from the read that copies it: the
  // check must still refuse a replaced blob, and leave no bundle behind.
  // named_sm90's data file with a 20 MiB weights blob stored under its
  // SHA-256, as ExecuTorch's CUDA backend names one (large enough that a
  // second thread hashes it).
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  fs::copy_file(fixture("cuda/named_sm90/model.pte"), dir / "model.pte");
  {
    std::vector<uint8_t> blob(20u << 20);
    for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    auto original = PtdFile::open(fixture("cuda/named_sm90/encoder.ptd").string());
    REQUIRE(original.ok());
    PtdContents contents;
    for (const auto& entry : original->entries())
      contents.add(entry.key, SegmentSource::file_range(original->file(), entry.file_offset, entry.size), entry.layout);
    contents.add(to_hex(sha256(Bytes(blob.data(), blob.size()))) + "_weights_blob",
                 SegmentSource::memory(Bytes(blob.data(), blob.size())));
    REQUIRE(write_ptd_file((dir / "encoder.ptd").string(), contents).ok());
  }
  const std::string part = "enc=" + (dir / "model.pte").string() + "," + (dir / "encoder.ptd").string();
  auto keys = content_keys_of((dir / "encoder.ptd").string());
  REQUIRE(keys.size() == 1);
  auto good = run({"export", "-o", (dir / "good").string(), "--part", part});
  REQUIRE_MESSAGE(good.exit_code == 0, good.err);
  CHECK(sha256_file((dir / "good" / "enc.ptd").string()).value() == sha256_file((dir / "encoder.ptd").string()).value());
  CHECK(run({"verify", (dir / "good").string(), "--gpu", "none"}).exit_code == 0);

  flip_byte(dir / "encoder.ptd", keys[0].offset + keys[0].size / 2);
  auto bundle = dir / "bundle";
  auto exported = run({"export", "-o", bundle.string(), "--part", part});
  CHECK(exported.exit_code == 1);
  CHECK(contains(exported.err, (dir / "encoder.ptd").string()));
  CHECK(contains(exported.err, keys[0].key));
  CHECK(contains(exported.err, "hash to"));
  CHECK_FALSE(fs::exists(bundle / "bundle.json"));
  CHECK_FALSE(fs::exists(bundle / "enc.ptd"));

  // The same blob replaced in the bundle's copy: verify and inspect still see it.
  flip_byte(dir / "good" / "enc.ptd", keys[0].offset + keys[0].size / 2);
  auto verified = run({"verify", (dir / "good").string(), "--gpu", "none"});
  CHECK(verified.exit_code == 1);
  CHECK(contains(verified.out, keys[0].key));
  auto inspected = run({"inspect", "--sha256", "--json", (dir / "good").string()});
  CHECK(inspected.exit_code == 0);
  const auto doc = nlohmann::json::parse(inspected.out);
  CHECK(doc["files"][0]["parts"][0]["files"][1]["sha256_matches"] == false);
}

TEST_CASE("hostile: verify --require-signature fails unsigned and unchecked bundles") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_key_pair(dir.path());
  auto bundle = signed_enc_bundle(dir.path(), "bundle", "sm80", false);
  auto unsigned_ = run({"verify", bundle.string(), "--gpu", "none", "--require-signature"});
  CHECK(unsigned_.exit_code == 1);
  CHECK(contains(unsigned_.out, "--require-signature requires one"));
  CHECK(run({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
  REQUIRE(run({"sign", bundle.string(), "--key", (dir / "key.pem").string()}).exit_code == 0);
  auto unchecked = run({"verify", bundle.string(), "--gpu", "none", "--require-signature"});
  CHECK(unchecked.exit_code == 1);
  CHECK(contains(unchecked.out, "no key was given to check it"));
  auto checked = run({"verify", bundle.string(), "--gpu", "none", "--require-signature", "--key", (dir / "pub.pem").string()});
  CHECK_MESSAGE(checked.exit_code == 0, checked.out);
  auto lone = run({"verify", fixture("executorch/add.pte").string(), "--gpu", "none", "--require-signature"});
  CHECK(lone.exit_code == 1);
  CHECK(contains(lone.out, "only bundle folders are signed"));
}

TEST_CASE("hostile: readers wait for a writer; sign cleans up what an interrupted export left") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  make_key_pair(dir.path());
  auto bundle = dir / "bundle";
  REQUIRE(run(export_args(bundle, "enc")).exit_code == 0);

  SUBCASE("a writer holding the folder keeps readers out, and they say so") {
    int fd = ::open(bundle.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    const std::map<std::string, std::string> quick{{"PTBUNDLE_LOCK_WAIT", "1"}};
    auto verified = run({"verify", bundle.string(), "--gpu", "none"}, quick);
    CHECK(verified.exit_code == 1);
    CHECK(contains(verified.out, "another ptbundle process is changing this bundle"));
    auto inspected = run({"inspect", bundle.string()}, quick);
    CHECK(inspected.exit_code == 3);
    auto signed_ = run({"sign", bundle.string(), "--key", (dir / "key.pem").string()}, quick);
    CHECK(signed_.exit_code == 3);
    CHECK_FALSE(fs::exists(bundle / "bundle.sig"));
    // A reader holding it keeps the writer out.
    REQUIRE(::flock(fd, LOCK_SH) == 0);
    auto exported = run(export_args(bundle, "other"), quick);
    CHECK(exported.exit_code == 3);
    CHECK(contains(exported.err, "reading this bundle"));
    ::close(fd);
    CHECK(run(export_args(bundle, "other")).exit_code == 0);
  }
  SUBCASE("exports replacing a part while verify, inspect and sign read: each sees a whole bundle") {
    std::atomic<bool> stop{false};
    std::thread writer([&] {
      RaceLoop loop("exports while verify, inspect and sign read", 8);
      while (loop.next() && !stop) {
        std::this_thread::sleep_for(loop.delay(std::chrono::milliseconds(10)));
        run(export_args(bundle, "enc", {"--force"}));
      }
      stop = true;
    });
    int reads = 0;
    std::string problems;
    while (!stop) {
      auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json"});
      if (verified.exit_code != 0 || contains(verified.out, "\"warn\"")) problems += verified.out + "\n";
      auto inspected = run({"inspect", bundle.string(), "--json"});
      if (inspected.exit_code != 0) problems += inspected.err + "\n";
      auto signed_ = run({"sign", bundle.string(), "--key", (dir / "key.pem").string()});
      if (signed_.exit_code != 0) problems += signed_.err + "\n";
      ++reads;
    }
    stop = true;
    writer.join();
    CHECK_MESSAGE(problems.empty(), problems);
  }
  SUBCASE("after an export killed mid-commit, sign (a writer) removes the leftovers first, then signs") {
    auto killed = run(export_args(bundle, "enc", {"--force"}), {{"PTB_TEST_KILL_AT", "rename-1"}});
    REQUIRE(killed.exit_code == 128 + SIGKILL);
    REQUIRE(fs::exists(bundle / kJournalFileName));
    auto signed_ = run({"sign", bundle.string(), "--key", (dir / "key.pem").string()});
    CHECK_MESSAGE(signed_.exit_code == 0, signed_.err);
    CHECK(bundle_is_clean(bundle));
    auto verified = run({"verify", bundle.string(), "--gpu", "none", "--json", "--key", (dir / "pub.pem").string()});
    CHECK_MESSAGE(verified.exit_code == 0, verified.out);
    CHECK_FALSE(contains(verified.out, "\"warn\""));
    CHECK(run({"verify", bundle.string(), "--gpu", "none", "--key", (dir / "pub.pem").string()}).exit_code == 0);
  }
}
