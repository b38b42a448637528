// What is checked is what is used: run checks a bundle's part as verify does
// (open_checked_part) before it looks for a GPU, merge checks its input
// bundles through the files it then merges, and verify hashes a bundle's
// part files through the mappings its checks read; a file renamed over a checked
// one after it was opened is neither checked nor used. The moment between
// opening and checking is reached with PTB_TEST_KILL_AT and
// PTB_TEST_KILL_SIGNAL=STOP (file.h's test_kill_point).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <functional>
#include <map>

#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/integrity/checked_part.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/signing/folder_digests.h"
#include "cli_child.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;
using ptb::test::fixture;
using ptb::test::flip_byte;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Ended : ptb::test::ChildResult {
  bool stopped = false;  // reached the stop point
};

// The CLI with `args`; with `stop_at`, it stops there, `meanwhile` runs,
// and it goes on.
Ended run_cli(const std::vector<std::string>& args, const std::string& stop_at = "",
              const std::function<void()>& meanwhile = {}) {
  ptb::test::ChildOptions options;
  if (!stop_at.empty()) options.env = {{"PTB_TEST_KILL_AT", stop_at}, {"PTB_TEST_KILL_SIGNAL", "STOP"}};
  ptb::test::CliChild child(args, options);
  Ended ended;
  if (!stop_at.empty() && child.wait_stopped()) {
    ended.stopped = true;
    if (meanwhile) meanwhile();
    ::kill(child.pid(), SIGCONT);
  }
  static_cast<ptb::test::ChildResult&>(ended) = child.wait();
  return ended;
}

fs::path enc_bundle(const fs::path& dir, const std::string& name, const std::string& folder) {
  const fs::path bundle = dir / name;
  auto made = run_cli({"export", "-o", bundle.string(), "--part", "enc=" + fixture("cuda/" + folder + "/model.pte").string()});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return bundle;
}

uint64_t first_weight_offset(const fs::path& ptd) {
  auto opened = PtdFile::open(ptd.string());
  REQUIRE(opened.ok());
  REQUIRE_FALSE(opened->entries().empty());
  return opened->entries().front().file_offset;
}

// verify's words for the first failed check, from "<subject>: " on: what
// run must say too.
std::string verify_message(const fs::path& bundle, const std::string& starting) {
  auto verified = run_cli({"verify", bundle.string(), "--gpu", "none"});
  REQUIRE(verified.exit_code == 1);
  const size_t at = verified.out.find(starting);
  REQUIRE_MESSAGE(at != std::string::npos, verified.out);
  const size_t end = verified.out.find('\n', at);
  return verified.out.substr(at, end - at);
}

}  // namespace

TEST_CASE("checked inputs: run refuses a weight byte verify refuses, with verify's message, before asking for a GPU") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = enc_bundle(dir.path(), "a", "sm80");
  flip_byte(bundle / "enc.ptd", first_weight_offset(bundle / "enc.ptd") + 3);
  const std::string message = verify_message(bundle, "SHA-256 is ");
  auto ran = run_cli({"run", bundle.string(), "--random"});
  CHECK(ran.exit_code == 1);
  CHECK_MESSAGE(contains(ran.err, message), ran.err);
  CHECK(contains(ran.err, (bundle / "enc.ptd").string()));
  auto json = run_cli({"run", bundle.string(), "--random", "--json"});
  CHECK(json.exit_code == 1);
  CHECK(contains(json.out, "changed after export"));
}

TEST_CASE("checked inputs: run refuses a library byte under its content-addressed key, bundle.json rewritten to match") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = enc_bundle(dir.path(), "a", "sm80");
  auto keys = content_keys_of((bundle / "enc.pte").string());
  REQUIRE(keys.size() == 1);
  flip_byte(bundle / "enc.pte", keys[0].offset + keys[0].size / 2);
  ptb::test::rewrite_manifest_digests(bundle);
  const std::string message = verify_message(bundle, "its " + std::to_string(keys[0].size) + " bytes at offset");
  auto ran = run_cli({"run", bundle.string(), "--random"});
  CHECK(ran.exit_code == 1);
  CHECK_MESSAGE(contains(ran.err, message), ran.err);
  CHECK(contains(ran.err, keys[0].key));
}

TEST_CASE("checked inputs: run checks the very file it loads, not the one renamed over it after it was opened") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = enc_bundle(dir.path(), "a", "sm80");
  fs::copy_file(bundle / "enc.ptd", dir / "good.ptd");
  flip_byte(bundle / "enc.ptd", first_weight_offset(bundle / "enc.ptd") + 3);
  // The tampered file is opened; the good one is in place when the checks run.
  auto ran = run_cli({"run", bundle.string(), "--random"}, "part-opened",
                     [&] { fs::rename(dir / "good.ptd", bundle / "enc.ptd"); });
  CHECK(ran.stopped);
  CHECK(ran.exit_code == 1);
  CHECK_MESSAGE(contains(ran.err, "changed after export"), ran.err);
  CHECK(run_cli({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
}

TEST_CASE("checked inputs: verify hashes the very files it checks, not ones renamed over them") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = enc_bundle(dir.path(), "a", "sm80");
  fs::copy_file(bundle / "enc.ptd", dir / "good.ptd");
  flip_byte(bundle / "enc.ptd", first_weight_offset(bundle / "enc.ptd") + 3);
  // The tampered file is opened (and would be checked and run on the GPU);
  // the good one is in place when the files are hashed.
  auto verified = run_cli({"verify", bundle.string(), "--gpu", "none"}, "verify-parts-opened",
                          [&] { fs::rename(dir / "good.ptd", bundle / "enc.ptd"); });
  CHECK(verified.stopped);
  CHECK(verified.exit_code == 1);
  CHECK_MESSAGE(contains(verified.out, "changed after export"), verified.out);
  CHECK(run_cli({"verify", bundle.string(), "--gpu", "none"}).exit_code == 0);
}

TEST_CASE("checked inputs: merge checks its inputs through the files it merges, not ones renamed over them") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path a = enc_bundle(dir.path(), "a", "sm80");
  const fs::path b = enc_bundle(dir.path(), "b", "sm90");
  fs::copy_file(a / "enc.ptd", dir / "good.ptd");
  flip_byte(a / "enc.ptd", first_weight_offset(a / "enc.ptd") + 3);
  auto merged = run_cli({"merge", "-o", (dir / "out").string(), a.string(), b.string()}, "inputs-opened",
                        [&] { fs::rename(dir / "good.ptd", a / "enc.ptd"); });
  CHECK(merged.stopped);
  CHECK(merged.exit_code == 1);
  CHECK_MESSAGE(contains(merged.err, "changed after export"), merged.err);
  CHECK(contains(merged.err, (a / "enc.ptd").string()));
  CHECK_FALSE(fs::exists(dir / "out"));
  // Not stopped, the same inputs (now whole) merge.
  auto clean = run_cli({"merge", "-o", (dir / "out").string(), a.string(), b.string()});
  CHECK_MESSAGE(clean.exit_code == 0, clean.err);
}

TEST_CASE("checked inputs: merge refuses an input file changed in place, its size kept, after the inputs were checked") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  // A part without a CUDA delegate is copied whole from the first bundle.
  fs::path a = dir / "a", b = dir / "b";
  for (const fs::path& bundle : {a, b}) {
    auto made = run_cli({"export", "-o", bundle.string(), "--part", "add=" + fixture("executorch/add.pte").string()});
    REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  }
  // Changed after the inputs were checked and compared, right before the copy.
  const uint64_t size = fs::file_size(a / "add.pte");
  auto merged = run_cli({"merge", "-o", (dir / "out").string(), a.string(), b.string()}, "merge-copy",
                        [&] { flip_byte(a / "add.pte", size / 2); });
  CHECK(merged.stopped);
  CHECK(fs::file_size(a / "add.pte") == size);
  CHECK(merged.exit_code == 1);
  CHECK_MESSAGE(contains(merged.err, (a / "add.pte").string() + ": its bytes hash to sha256:"), merged.err);
  CHECK(contains(merged.err, "its bundle.json records sha256:"));
  CHECK_FALSE(fs::exists(dir / "out"));
  for (const auto& entry : fs::directory_iterator(dir.path())) CHECK_MESSAGE(!contains(entry.path().filename().string(), ".out.merge-"), entry.path());

  // A CUDA part's weights, changed right after the inputs were checked: the
  // merge refuses them, naming the file (whichever read finds it first).
  const fs::path c = enc_bundle(dir.path(), "c", "sm80");
  const fs::path d = enc_bundle(dir.path(), "d", "sm90");
  const uint64_t offset = first_weight_offset(c / "enc.ptd") + 3;
  auto weights = run_cli({"merge", "-o", (dir / "out2").string(), c.string(), d.string()}, "inputs-checked",
                         [&] { flip_byte(c / "enc.ptd", offset); });
  CHECK(weights.stopped);
  CHECK(weights.exit_code == 1);
  CHECK_MESSAGE(contains(weights.err, (c / "enc.ptd").string()), weights.err);
  CHECK_FALSE(fs::exists(dir / "out2"));
  flip_byte(c / "enc.ptd", offset);  // whole again: the same inputs merge
  auto clean = run_cli({"merge", "-o", (dir / "out2").string(), c.string(), d.string()});
  CHECK_MESSAGE(clean.exit_code == 0, clean.err);
}

TEST_CASE("checked inputs: open_checked_part returns the mappings it checked and says what passed") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path path = enc_bundle(dir.path(), "a", "sm80");
  auto bundle = Bundle::open(path.string());
  REQUIRE(bundle.ok());
  auto checked = open_checked_part(*bundle, "enc");
  REQUIRE_MESSAGE(checked.ok(), checked.error().message);
  CHECK(checked->checks.manifest);
  CHECK(checked->checks.files.size() == checked->part.entry->files.size());
  CHECK(checked->checks.content_keys >= 1);
  CHECK(contains(checked->checks.what, "SHA-256"));
  REQUIRE(checked->part.data);
  for (const CheckedFile& file : checked->checks.files) {
    CAPTURE(file.path);
    CHECK(file.sha256.size() == 64);
  }
  // run's input carries the same record.
  auto input = open_run_input(path.string(), {});
  REQUIRE_MESSAGE(input.ok(), input.error().message);
  CHECK(input->checked.files.size() == checked->checks.files.size());
  CHECK(input->checked.manifest);

  flip_byte(path / "enc.ptd", first_weight_offset(path / "enc.ptd"));
  auto refused = open_checked_part(*bundle, "enc");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::Invalid);
  CHECK(contains(refused.error().message, (path / "enc.ptd").string()));
  CHECK(contains(refused.error().message, "changed after export"));
}

// What a robot process runs at open (check_opened_part, librobot's
// Model::open): the part's files and the blobs inside them hashed once, from
// the part's own mappings; a blob that no longer hashes to its key is
// reported in check_program_content_keys's words, as verify and run say it.
TEST_CASE("checked inputs: an opened part's replaced content-addressed blob is refused in verify's words") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  const fs::path bundle = enc_bundle(dir.path(), "a", "sm80");
  auto check = [&](CheckList& checks) {
    auto opened = ptb::Bundle::open(bundle.string());
    REQUIRE_MESSAGE(opened.ok(), opened.error().message);
    auto part = opened->open_part("enc");
    REQUIRE_MESSAGE(part.ok(), part.error().message);
    SignatureSummary summary;
    (void)check_opened_part(opened->dir(), opened->manifest_file().bytes(), &*part, IntegrityOptions{}, checks, summary);
  };
  CheckList intact;
  check(intact);
  CHECK_FALSE(intact.failed());
  for (const CheckOutcome& outcome : intact.outcomes()) CHECK_MESSAGE(outcome.status != CheckStatus::Fail, outcome.message);

  auto keys = content_keys_of((bundle / "enc.pte").string());
  REQUIRE(keys.size() == 1);
  flip_byte(bundle / "enc.pte", keys[0].offset + keys[0].size / 2);
  ptb::test::rewrite_manifest_digests(bundle);
  const std::string message = verify_message(bundle, "its " + std::to_string(keys[0].size) + " bytes at offset");
  CheckList replaced;
  check(replaced);
  std::vector<std::string> failures;
  for (const CheckOutcome& outcome : replaced.outcomes())
    if (outcome.status == CheckStatus::Fail) failures.push_back(outcome.check + ": " + outcome.subject + ": " + outcome.message);
  REQUIRE(failures.size() == 1);
  CHECK_MESSAGE(contains(failures[0], checks::kContentKey), failures[0]);
  CHECK_MESSAGE(contains(failures[0], message), (failures[0] + "\nverify: " + message));
  CHECK(contains(failures[0], keys[0].key));
}
