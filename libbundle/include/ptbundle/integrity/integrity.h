// The checks of `ptbundle verify` that need no knowledge of GPUs: names,
// the manifest against the files (present, sizes, SHA-256, nothing
// unlisted), the readers' own bounds checks, every key a delegate references
// present with the size it needs, weight views inside their storage, and the
// test-case files against their method's signature.
//
// Every problem becomes one failed check and the checking goes on, so a
// report lists all problems rather than the first: a reader error fails the
// check of that file and skips what depends on it. libcuda's gpu_check.h
// continues with the subjects found here (GPU verdicts, test cases).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/base/file.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/base/result.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/keys.h"

namespace ptb {

// Warn: worth a look but not a failure (verify still exits 0), e.g. files an
// interrupted write left behind.
enum class CheckStatus { Pass, Fail, Skip, Warn };
const char* check_status_name(CheckStatus status);  // "pass", "fail", "skip", "warn"

// The names of the checks, as `verify --json` reports them.
// A struct rather than a namespace of its own: ptb is the only namespace of the
// public API, and callers still write checks::kGpu.
struct checks {
  static constexpr const char* kInput = "input";                  // the PATH is a bundle, .pte, .bpte or .pt2
  static constexpr const char* kManifest = "manifest";            // bundle.json reads and validates
  static constexpr const char* kName = "name";                    // part names and data names follow the rules
  static constexpr const char* kNameCollision = "name_collision"; // no two names differ only in case
  static constexpr const char* kFile = "file";                    // a listed file: present, size, SHA-256
  static constexpr const char* kUnlistedFile = "unlisted_file";   // a .pte/.ptd in the folder the manifest lacks
  static constexpr const char* kProgram = "program";              // the .pte/.bpte/.pt2 opens (segments, offsets)
  static constexpr const char* kDataFile = "data_file";           // the .ptd is found and opens
  static constexpr const char* kManifestProgram = "manifest_program";  // manifest methods = the program's
  static constexpr const char* kDataName = "data_name";           // delegates' data_name compile specs
  static constexpr const char* kDelegateKeys = "delegate_keys";   // every referenced key, with its size
  static constexpr const char* kWeights = "weights";              // per-FQN weight views fit their storage
  static constexpr const char* kTestcaseFile = "testcase_file";   // testcases/<part>.ptd matches the method
  static constexpr const char* kPackageLayout = "package_layout"; // a .pt2 compiled as ExecuTorch's CUDA backend needs
  static constexpr const char* kKernelTargets = "kernel_targets"; // manifest's kernel targets = the libraries'
  static constexpr const char* kGpu = "gpu";                      // each CUDA part can run on the GPU
  static constexpr const char* kTestcase = "testcase";            // recorded test cases reproduce
  static constexpr const char* kSignature = "signature";          // the bundle's signature verifies with a key given
  static constexpr const char* kSignedFiles = "signed_files";     // the files are exactly those signed
  static constexpr const char* kContentKey = "content_key";       // "<sha256>_so_blob" keys hash to their name
  static constexpr const char* kLeftover = "leftover";            // temporary files of an interrupted write
  static constexpr const char* kTuneFile = "tune_file";           // tune.json: listed, size, SHA-256, reads
};

// One check's outcome. fields(F&) describes it to a report printer, as
// every library report does (inspect_model.h): schemas/verify.schema.json.
struct CheckOutcome {
  std::string path;     // the PATH argument the check belongs to
  std::string check;    // one of checks::
  std::string subject;  // "part encoder", "enc.ptd: key 'x'", ...
  CheckStatus status = CheckStatus::Pass;
  std::string message;  // what is wrong and what would fix it; for a pass, what was found
  template <class F>
  void fields(F& f) const {
    f("check", check)("subject", subject)("status", check_status_name(status))("message", message)("path", path);
  }
};

// How many checks ended each way. A warning is its own count: neither a
// pass nor a skip.
struct CheckTally {
  size_t passed = 0, failed = 0, skipped = 0, warned = 0;
  void add(CheckStatus status) {
    switch (status) {
      case CheckStatus::Pass: ++passed; break;
      case CheckStatus::Fail: ++failed; break;
      case CheckStatus::Skip: ++skipped; break;
      case CheckStatus::Warn: ++warned; break;
    }
  }
  size_t total() const { return passed + failed + skipped + warned; }
  template <class F>
  void fields(F& f) const {
    f("checks", total())("passed", passed)("failed", failed)("skipped", skipped)("warned", warned);
  }
};

class CheckList {
 public:
  // The PATH argument that outcomes added from now on belong to.
  void begin_path(std::string path) { path_ = std::move(path); }
  void pass(std::string check, std::string subject, std::string message);
  void fail(std::string check, std::string subject, std::string message);
  void skip(std::string check, std::string subject, std::string message);
  void warn(std::string check, std::string subject, std::string message);

  const std::vector<CheckOutcome>& outcomes() const { return outcomes_; }
  size_t count(CheckStatus status) const;
  bool failed() const { return count(CheckStatus::Fail) > 0; }

 private:
  void add(std::string check, std::string subject, CheckStatus status, std::string message);
  std::string path_;
  std::vector<CheckOutcome> outcomes_;
};

enum class SubjectKind { Program, BundledProgram, Package };

// A program whose files opened: what the GPU and test-case checks work on.
struct VerifySubject {
  std::string label;      // "part encoder", "sm80/model.pte"
  std::string part_name;  // the bundle part, or the file's stem
  SubjectKind kind = SubjectKind::Program;
  std::string program_path;
  // Program and BundledProgram (the program inside), with its data file when
  // it has one that opened; described and decoded once for every check.
  std::shared_ptr<const ProgramWithData> program;
  std::shared_ptr<const BpteFile> bpte;   // BundledProgram
  std::shared_ptr<const Pt2Package> package;  // Package
  // Bundle parts only.
  std::optional<std::string> bundle_dir;
  std::optional<ManifestPart> manifest;
  // Parts with one program per GPU target: this program's target ("sm_90");
  // the part's other programs are subjects of their own, with the same part_name.
  std::optional<std::string> target;
  std::shared_ptr<const PtdFile> testcase;  // testcases/<part>.ptd, when it passed its checks
  std::string testcase_method;              // the method the test case calls
};

// Runs every check above on one argument ("bundle/", "model.pte",
// "model.pte,data.ptd", parsed by parse_program_argument) and returns the
// subjects the GPU checks can go on with (those whose program opened). Never
// fails: a problem is a failed check.
std::vector<VerifySubject> check_integrity(std::string_view argument, CheckList& checks);

// What verify learnt of a bundle's signature.
struct SignatureSummary {
  std::string path;                            // the PATH argument
  std::optional<std::string> file;             // the signature file, when the bundle has one
  std::optional<std::string> key_fingerprint;  // the key hint it records
  std::optional<std::string> key;              // the key file it verified with
  std::optional<std::string> curve;            // of that key
  bool verified = false;                       // verified, and the files are exactly as signed
  template <class F>
  void fields(F& f) const {
    f("file", file)("key_fingerprint", key_fingerprint)("key", key)("curve", curve)("verified", verified);
  }
};

// A file of the bundle that the caller wrote itself and holds (HeldFile),
// with the SHA-256 of the bytes it wrote (pull: the digest checked as they
// arrived). Where the bundle's file at that path is this very file, still
// unchanged, the digest stands for hashing the file again; the checks that
// read the file (its structure, its content-addressed keys) still read it.
struct WrittenDigest {
  std::shared_ptr<const HeldFile> file;
  std::string sha256;  // hex
};

struct IntegrityOptions {
  // With keys, a bundle must carry a signature that one of them verifies
  // (checked first), and its files must be exactly the signed ones.
  std::vector<PublicKey> keys;
  unsigned threads = 0;  // hashing threads; 0: one per core
  Progress progress;     // the bytes of a bundle's files as they are hashed
  // Every PATH must be a bundle whose signature was checked: an unsigned
  // bundle fails, and so does a signed one when no key was given (its
  // signature would be unchecked), and any PATH that is not a bundle.
  bool require_signature = false;
  // By path relative to the bundle folder (check_bundle only).
  std::map<std::string, WrittenDigest> written;
};

// As above, with signature keys; a bundle's files are hashed once, in
// parallel, for the signature, bundle.json and the content-addressed keys
// together. `signature` (may be null) receives what was found of it.
std::vector<VerifySubject> check_integrity(std::string_view argument, CheckList& checks, const IntegrityOptions& options,
                                           SignatureSummary* signature);

struct BundlePart;

// What a process that loads one part of a bundle (the robot API) checks
// first, over the bytes it then loads, the mappings `part` holds: verify's
// signature checks (kSignature with options.keys and
// options.require_signature; kSignedFiles over bundle.json, whose bytes are
// `manifest`, and the part's files only), the part's files against
// bundle.json (kFile), the content-addressed keys of its programs
// (kContentKey) and its test-case file against its method (kTestcaseFile).
// Other parts' files are not read. Returns the method the part's test case
// calls, when it has one that passed its checks. With `part` null, the
// signature is checked over bundle.json alone (a look into the bundle).
std::optional<std::string> check_opened_part(const BundleDir& dir, Bytes manifest, const BundlePart* part,
                                             const IntegrityOptions& options, CheckList& checks,
                                             SignatureSummary& summary);

// What a command that builds on a bundle (merge) checks of it first, as
// verify does, so that it never launders a changed bundle into a clean one:
// every file bundle.json lists, with its size and SHA-256; every
// content-addressed key of the folder; and, when the bundle carries a
// signature, the files against it. With `options.keys` the signature must
// verify with one of them (and an unsigned bundle is refused); without keys
// its statement is unauthenticated, but files that differ from it still
// prove a change after signing. The folder is hashed once, in parallel
// (options.threads). The error is the first problem, naming its file.
Status check_bundle_unchanged(const std::string& dir, const Manifest& manifest, const IntegrityOptions& options);
// The same of a bundle opened with its parts (merge's inputs): bundle.json
// and every file of `parts` are hashed through the descriptors of the
// mappings the caller then reads, never opened again by path, so that what
// is checked is what is used.
class Bundle;
struct BundlePart;
Status check_bundle_unchanged(const Bundle& bundle, const std::vector<const BundlePart*>& parts,
                              const IntegrityOptions& options);

}  // namespace ptb
