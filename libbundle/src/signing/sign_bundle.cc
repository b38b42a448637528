// sign_bundle and the removal of signatures a writer made invalid.
#include "ptbundle/signing/sign_bundle.h"

#include <cctype>
#include <filesystem>
#include <set>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/base/interrupt.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

Status check_output_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." || name.size() < 5 ||
      name.compare(name.size() - 4, 4, ".sig") != 0 || name.front() == '.')
    return usage_error("--output \"" + printable(name) + "\": expected a file name ending in .sig (the signature is written inside the bundle)");
  return {};
}

// The subject's name: the folder's last component, as model_signing takes it.
std::string folder_name(const std::string& dir) {
  fs::path path(dir);
  while (path.has_relative_path() && path.filename().empty()) path = path.parent_path();
  std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..") {
    std::error_code ec;
    name = fs::weakly_canonical(dir, ec).filename().string();
  }
  return name;
}

// What `verify` would refuse, refused before signing: signing a damaged
// bundle would only make the damage look approved.
Status check_before_signing(const std::string& dir, const FolderDigests& digests) {
  for (const FileDigest& file : digests.files) {
    for (const ContentKeyDigest& key : file.content_keys) {
      if (!key.matches())
        return invalid(dir + "/" + file.path + ": " + key.where + " \"" + key.key + "\": its " + std::to_string(key.size) +
                       " bytes hash to " + key.actual + "; the key names other bytes; export the part again before signing");
    }
  }
  PTB_TRY(Manifest manifest, read_manifest(dir));
  std::set<std::string> listed_paths;
  for (const ManifestPart& part : manifest.parts)
    for (const ManifestFile& listed : part.files) listed_paths.insert(listed.path);
  for (const FileDigest& file : digests.files) {
    std::string extension = fs::path(file.path).extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((extension == ".pte" || extension == ".ptd") && !listed_paths.count(file.path))
      return invalid(dir + "/" + file.path + ": is in the bundle folder but bundle.json does not list it; a signature "
                     "would approve it; delete it, or add it as a part with ptbundle export, then sign");
  }
  for (const ManifestPart& part : manifest.parts) {
    for (const ManifestFile& listed : part.files) {
      const FileDigest* file = digests.find(listed.path);
      if (!file || file->kind != FolderEntryKind::File)
        return invalid(dir + "/" + listed.path + ": missing; bundle.json lists it; run ptbundle verify");
      if (file->size != listed.size)
        return invalid(dir + "/" + listed.path + ": is " + std::to_string(file->size) + " bytes; bundle.json records " +
                       std::to_string(listed.size) + "; run ptbundle verify, then export the part again before signing");
      if (file->sha256 != listed.sha256)
        return invalid(dir + "/" + listed.path + ": SHA-256 is " + file->sha256 + "; bundle.json records " + listed.sha256 +
                       "; run ptbundle verify, then export the part again before signing");
    }
  }
  if (manifest.tune) {
    const FileDigest* file = digests.find(manifest.tune->path);
    if (!file || file->kind != FolderEntryKind::File || file->size != manifest.tune->size ||
        file->sha256 != manifest.tune->sha256) {
      return invalid(dir + "/" + manifest.tune->path +
                     ": missing, or not the size and SHA-256 bundle.json records; run ptbundle tune again before "
                     "signing");
    }
  }
  return {};
}

// What an interrupted writer left is no part of the bundle: signing it would
// approve a lock, a journal or a half-placed file, and verify would then
// accept them as signed.
Status check_no_leftovers(const BundleDir& dir, const Manifest& manifest) {
  BundleLeftovers left = find_leftovers(dir, &manifest);
  std::vector<std::string> found = left.temporary;
  found.insert(found.end(), left.pending.begin(), left.pending.end());
  found.insert(found.end(), left.unexplained.begin(), left.unexplained.end());
  if (left.journal) found.push_back(kJournalFileName);
  if (lock_file_is_stale(dir)) found.push_back(kLockFileName);
  if (found.empty()) return {};
  std::string names;
  for (const std::string& path : found) names += (names.empty() ? "" : ", ") + path;
  return invalid(dir.path() + ": holds what an interrupted ptbundle export or merge left (" + names +
                 "); expected a bundle with none, as a signature would approve them; run ptbundle export into it again "
                 "(which removes them) or delete them, then sign");
}

// bundle.json's sizes against the folder's before a byte is hashed: a file
// of another size cannot hold the recorded digest, so a sparse terabyte that
// bundle.json records as small is refused at once instead of read through.
Status check_listed_sizes(const std::string& dir, const Manifest& manifest) {
  for (const ManifestPart& part : manifest.parts) {
    for (const ManifestFile& listed : part.files) {
      const fs::path path = fs::path(dir) / listed.path;
      std::error_code ec;
      const fs::file_status status = fs::symlink_status(path, ec);
      if (ec || !fs::is_regular_file(status))
        return invalid(path.string() + ": missing or not a regular file; bundle.json lists it; run ptbundle verify");
      const uint64_t size = fs::file_size(path, ec);
      if (ec) return io_error(path.string() + ": cannot read its size: " + ec.message());
      if (size != listed.size)
        return invalid(path.string() + ": is " + std::to_string(size) + " bytes; bundle.json records " +
                       std::to_string(listed.size) + "; run ptbundle verify, then export the part again before signing");
    }
  }
  return {};
}

}  // namespace

Result<SignReport> sign_bundle(const SignOptions& options) {
  PTB_CHECK(check_output_name(options.output_name));
  const std::string& dir = options.bundle_dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return usage_error(dir + ": not a folder; expected a bundle folder made by ptbundle export");
  if (!fs::exists(fs::path(dir) / kManifestFileName, ec))
    return invalid(dir + ": folder without " + std::string(kManifestFileName) + "; expected a bundle folder made by ptbundle export");
  // A writer's lock, held until the signature is in place: it signs the
  // bundle as it is between writes, two signs never sign at once (the second
  // then finds the first's signature), and what an interrupted writer or sign
  // left (its temporary files) is removed before anything is hashed.
  PTB_TRY(BundleTransaction transaction, BundleTransaction::begin(dir, /*create=*/false, bundle_lock_wait()));
  const BundleDir& bundle = transaction.dir();
  PTB_TRY(Manifest manifest, read_manifest(bundle));
  PTB_CHECK(check_no_leftovers(bundle, manifest));
  PTB_CHECK(check_listed_sizes(dir, manifest));

  // verify reads one signature per bundle, and a second one would sign the
  // first as one of the bundle's files: refused, naming the one there.
  for (const std::string& other : find_signature_files(bundle)) {
    if (other != options.output_name)
      return invalid(dir + "/" + other + ": the bundle is already signed in this file; expected one signature per "
                     "bundle: sign into it (--output " + other + ") or remove it first");
  }

  std::optional<std::string> password;
  if (options.password_file) {
    PTB_TRY(password, read_password_file(*options.password_file));
  }
  PTB_TRY(SigningKey key, SigningKey::load(options.key_path, password));

  std::vector<std::string> ignore{options.output_name};
  for (const std::string& path : git_ignore_paths()) ignore.push_back(path);
  FolderHashOptions hashing;
  hashing.ignore = ignore;
  hashing.threads = options.threads;
  hashing.progress = options.progress;
  for (const ManifestPart& part : manifest.parts)
    for (const ManifestFile& listed : part.files) hashing.expected_sizes[listed.path] = listed.size;
  PTB_TRY(FolderDigests digests, hash_folder(dir, hashing));
  // A writer waiting for the folder lock made .ptbundle.lock: not the bundle's.
  if (!lock_file_is_stale(bundle))
    std::erase_if(digests.files, [](const FileDigest& file) { return file.path == kLockFileName; });
  PTB_CHECK(check_before_signing(dir, digests));
  auto statement = statement_for(folder_name(dir), digests, ignore);
  if (!statement.ok()) return with_context(dir, statement.take_error());

  const std::string payload = statement_payload(*statement);
  const Bytes payload_bytes(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  const std::vector<uint8_t> message = dsse_pae(payload_bytes);
  PTB_TRY(std::vector<uint8_t> signature, key.sign(Bytes(message.data(), message.size())));
  const PublicKey& public_key = key.public_key();
  const std::string json = sigstore_bundle_json(public_key.fingerprint(), payload_bytes, Bytes(signature.data(), signature.size()));
  const std::string path = (fs::path(dir) / options.output_name).string();
  {
    PTB_TRY(AtomicOutput out, AtomicOutput::create_in(bundle, options.output_name));
    PTB_CHECK(out.write(Bytes(reinterpret_cast<const uint8_t*>(json.data()), json.size())));
    // In place, the signature is the command's result: a signal held back
    // during the rename no longer fails it.
    DeferInterrupts defer;
    test_kill_point("sign-rename");
    PTB_CHECK(out.commit());
    defer.committed();
  }

  SignReport report;
  report.signature_path = path;
  report.key_fingerprint = public_key.fingerprint();
  report.curve = public_key.curve();
  report.hash = public_key.hash();
  report.statement = std::move(*statement);
  report.bytes = digests.bytes;
  return report;
}

std::vector<std::string> remove_invalidated_signatures(const std::string& changed_path) {
  std::error_code ec;
  fs::path folder(changed_path);
  if (!fs::is_directory(folder, ec)) folder = folder.parent_path();
  if (folder.empty()) folder = ".";
  // A file in testcases/ or in a GPU-target folder belongs to the bundle above it.
  if (!fs::exists(folder / kManifestFileName, ec)) {
    const std::string name = folder.filename().string();
    if (name == kTestcaseFolder || is_gpu_target_name(name)) folder = folder.parent_path();
  }
  if (!fs::exists(folder / kManifestFileName, ec)) return {};
  auto bundle = BundleDir::open(folder.string());
  if (!bundle.ok()) return {};
  std::vector<std::string> removed;
  for (const std::string& name : find_signature_files(*bundle)) {
    if (bundle->remove_file(name).ok()) removed.push_back((folder / name).string());
  }
  return removed;
}

}  // namespace ptb
