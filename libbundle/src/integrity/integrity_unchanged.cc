// check_bundle_unchanged: verify's file, content-key and signature checks on
// an input bundle, for commands that build on one (merge), reported as one
// error: a tampered input is refused instead of being merged into a bundle
// whose new bundle.json and digests would make the change look approved.
#include <algorithm>

#include "integrity/integrity_internal.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

std::string in_folder(const std::string& dir, const std::string& relative) {
  return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + relative;
}

// The first failed check as one error line, "<subject>: <message>", naming
// the other subjects that failed (a few) so that none goes unmentioned.
Status first_failure(const CheckList& checks, const std::string& dir) {
  std::vector<const CheckOutcome*> failed;
  for (const CheckOutcome& outcome : checks.outcomes())
    if (outcome.status == CheckStatus::Fail) failed.push_back(&outcome);
  if (failed.empty()) return {};
  std::string message = failed[0]->subject + ": " + failed[0]->message;
  if (failed.size() > 1) {
    message += "; also " + std::to_string(failed.size() - 1) + " more:";
    for (size_t i = 1; i < failed.size() && i <= 4; ++i) message += (i > 1 ? ", " : " ") + failed[i]->subject;
    if (failed.size() > 5) message += ", ...";
  }
  return invalid(message + " (ptbundle verify " + dir + " lists every problem)");
}

}  // namespace

namespace {

Status check_unchanged(const std::string& dir, const Manifest& manifest, const IntegrityOptions& options,
                       std::map<std::string, FolderHashOptions::OpenFile> open_files) {
  PTB_TRY(BundleDir bundle, BundleDir::open(dir));
  detail::FolderReading reading = detail::folder_reading(bundle, &manifest, options.threads);
  reading.hashing.progress = options.progress;
  reading.hashing.open_files = std::move(open_files);
  const std::optional<std::string>& signature_name = reading.signature_name;
  PTB_TRY(FolderDigests digests, hash_folder(dir, reading.hashing));

  CheckList checks;
  for (const ManifestPart& part : manifest.parts) {
    for (const ManifestFile& listed : part.files) {
      const std::string path = in_folder(dir, listed.path);
      const FileDigest* file = digests.find(listed.path);
      if (!file || file->kind != FolderEntryKind::File) {
        checks.fail(checks::kFile, path, "missing or not a regular file; bundle.json lists it as part " + part.name + "'s " +
                                             file_role_name(listed.role) + " file");
      } else if (!file->error.empty()) {
        checks.fail(checks::kFile, path, file->error + "; bundle.json records " + std::to_string(listed.size) + " bytes");
      } else if (file->size != listed.size || file->sha256 != listed.sha256) {
        checks.fail(checks::kFile, path,
                    std::to_string(file->size) + " bytes with SHA-256 " + file->sha256 + "; bundle.json records " +
                        std::to_string(listed.size) + " bytes with SHA-256 " + listed.sha256 +
                        ": the file changed after export; restore it or export the part again");
      }
    }
  }
  PTB_CHECK(first_failure(checks, dir));

  detail::check_content_keys(dir, digests, checks);
  PTB_CHECK(first_failure(checks, dir));

  if (!options.keys.empty()) {
    SignatureSummary summary;
    detail::check_signature(bundle, signature_name, digests, options, checks, summary);
    return first_failure(checks, dir);
  }
  if (!signature_name) return {};
  // No key: the statement is not authenticated, but files that differ from
  // what it lists were changed after signing, by whoever signed it.
  PTB_TRY(SignatureFile signature, read_signature_file(bundle, *signature_name));
  if (!signature.statement_error.empty()) return invalid(signature.path + ": " + signature.statement_error);
  detail::check_signed_files(dir, signature.statement, digests, checks);
  return first_failure(checks, dir);
}

}  // namespace

Status check_bundle_unchanged(const std::string& dir, const Manifest& manifest, const IntegrityOptions& options) {
  return check_unchanged(dir, manifest, options, {});
}

Status check_bundle_unchanged(const Bundle& bundle, const std::vector<const BundlePart*>& parts,
                              const IntegrityOptions& options) {
  std::map<std::string, FolderHashOptions::OpenFile> open_files;
  open_files[kManifestFileName] = {bundle.manifest_file().fd(), {}, {}};
  for (const BundlePart* part : parts) open_files.merge(detail::part_open_files(*part));
  return check_unchanged(bundle.path(), bundle.manifest(), options, std::move(open_files));
}

}  // namespace ptb
