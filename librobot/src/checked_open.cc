#include "checked_open.h"

#include <chrono>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/file_kind.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/kernels/compat.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/keys.h"

namespace ptb::robot::detail {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A lone file: verify's checks of that file.
Result<CheckedPart> open_lone(const std::string& path, const Options& options) {
  if (!options.keys.empty() || options.require_signature) {
    return invalid(path + ": is not a bundle folder; a signature is checked on a bundle only (ptbundle sign signs "
                          "a folder), and Options::keys or require_signature asks for one");
  }
  CheckedPart checked;
  checked.path = path;
  auto start = std::chrono::steady_clock::now();
  if (options.verify) {
    (void)check_integrity(path, checked.checks);
    PTB_CHECK(first_failure(checked.checks, path));
  }
  checked.check_ms = ms_since(start);
  return checked;
}

}  // namespace

Result<std::vector<PublicKey>> load_keys(const std::vector<std::string>& keys) {
  std::vector<PublicKey> loaded;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (key.rfind("-----BEGIN", 0) == 0) {
      Bytes bytes(reinterpret_cast<const uint8_t*>(key.data()), key.size());
      PTB_TRY(PublicKey parsed, PublicKey::from_bytes(bytes, "Options::keys[" + std::to_string(i) + "] (PEM text)"));
      loaded.push_back(std::move(parsed));
    } else {
      PTB_TRY(PublicKey parsed, PublicKey::load(key));
      loaded.push_back(std::move(parsed));
    }
  }
  return loaded;
}

SignatureInfo signature_info(const SignatureSummary& summary, const CheckList& checks) {
  SignatureInfo info;
  info.file = summary.file.value_or("");
  info.key_fingerprint = summary.key_fingerprint.value_or("");
  info.key = summary.key.value_or("");
  bool signature_passed = false;
  for (const CheckOutcome& outcome : checks.outcomes())
    if (outcome.check == checks::kSignature && outcome.status == CheckStatus::Pass) signature_passed = true;
  if (!summary.file) info.state = SignatureState::Unsigned;
  else if (signature_passed && !checks.failed()) info.state = SignatureState::Verified;
  else info.state = SignatureState::Unchecked;
  return info;
}

Status first_failure(const CheckList& checks, const std::string& path) {
  std::vector<const CheckOutcome*> failed;
  for (const CheckOutcome& outcome : checks.outcomes())
    if (outcome.status == CheckStatus::Fail) failed.push_back(&outcome);
  if (failed.empty()) return {};
  std::string message = failed[0]->subject + ": " + failed[0]->message;
  if (failed.size() > 1) message += " (and " + std::to_string(failed.size() - 1) + " more problem(s))";
  return invalid(message + "; ptbundle verify " + path + " lists every problem");
}

Result<OpenedManifest> open_manifest(const std::string& folder) {
  PTB_TRY(ptb::Bundle bundle, ptb::Bundle::open(folder));
  // Read again under the bundle's read lock, which keeps writers out: these
  // bytes are both hashed and parsed, so the part list used is the one
  // whose digest the signature covers.
  PTB_TRY(MappedFile file, MappedFile::open_in(bundle.dir(), kManifestFileName));
  if (file.size() > kMaxManifestBytes) {
    return invalid(file.path() + ": " + std::to_string(file.size()) + " bytes; expected at most " +
                   std::to_string(kMaxManifestBytes));
  }
  auto bytes = std::make_shared<const MappedFile>(std::move(file));
  Bytes data = bytes->bytes();
  PTB_TRY(Manifest manifest,
          parse_manifest(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), bytes->path()));
  return OpenedManifest{std::move(bundle), std::move(bytes), std::make_shared<const Manifest>(std::move(manifest))};
}

Result<CheckedPart> open_checked(const std::string& path, const Options& options) {
  PTB_TRY(InputPath input, open_input_path(path));
  if (input.kind != FileKind::Bundle) return open_lone(path, options);

  auto start = std::chrono::steady_clock::now();
  PTB_TRY(OpenedManifest opened, open_manifest(path));
  PTB_TRY(auto named, opened.bundle.find_part(options.part, "Options::part"));
  const ManifestPart* entry = opened.manifest->find_part(named->name);
  if (!entry) return invalid(opened.bundle.dir().display(kManifestFileName) + ": changed while it was read");
  CheckedPart checked;
  checked.path = path;
  PTB_TRY(checked.bundle_part,
          open_bundle_part(opened.bundle.dir(), std::shared_ptr<const ManifestPart>(opened.manifest, entry)));

  IntegrityOptions integrity;
  PTB_TRY(integrity.keys, load_keys(options.keys));
  integrity.require_signature = options.require_signature;
  if (options.verify || !options.keys.empty() || options.require_signature) {
    checked.testcase_method = check_opened_part(opened.bundle.dir(), opened.bytes->bytes(), &*checked.bundle_part,
                                                integrity, checked.checks, checked.signature);
    PTB_CHECK(first_failure(checked.checks, path));
  }
  checked.check_ms = ms_since(start);
  return checked;
}

Status prepare_for_gpu(CheckedPart& checked, const Options& options, const CudaDeviceInfo& gpu) {
  RunPartOptions run;
  run.part = options.part;
  run.method = options.method;
  run.gpu = gpu.capability;
  run.driver_version = gpu.driver_version;
  if (!checked.bundle_part) {
    PTB_TRY(checked.part, open_run_part(checked.path, run));
    return {};
  }
  const BundlePart& part = *checked.bundle_part;
  const ManifestPart& entry = *part.entry;
  // The program for this GPU, from the mappings just checked.
  size_t index = 0;
  std::string picked;
  if (part.per_target()) {
    std::vector<std::string> targets;
    for (const BundleProgram& program : part.programs) targets.push_back(program.target.value_or(""));
    TargetProgramChoice choice = choose_target_program(targets, gpu.capability);
    if (!choice.index) return invalid(checked.path + ": part '" + entry.name + "' cannot run: " + choice.message);
    index = *choice.index;
    picked = "picked " + choice.message + " (" + part.programs[index].path + "); ";
  }
  checked.program = part.programs[index].program;
  PTB_TRY(checked.part, open_run_part(checked.program, entry.name, run));
  checked.part.variant = picked + checked.part.variant;

  if (!options.verify) return {};
  if (checked.testcase_method && part.testcase) {
    if (*checked.testcase_method != checked.part.method) {
      checked.testcase_skip = "the test case calls method " + *checked.testcase_method + "; method " +
                              checked.part.method + " was loaded";
      return {};
    }
    PTB_TRY(PartTestCase test, read_part_testcase(entry, *part.testcase, *checked.testcase_method, *checked.program));
    checked.testcase = std::move(test);
  } else {
    checked.testcase_skip = entry.testcase ? "its test-case file did not pass its checks"
                                           : "the part records no test case; export it with --example to add one";
  }
  return {};
}

}  // namespace ptb::robot::detail
