// sign_bundle and the removal of signatures a writer made invalid.
#include "ptbundle/signing/sign_bundle.h"

#include <filesystem>

#include "ptbundle/bundle/manifest.h"

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
  for (const ManifestPart& part : manifest.parts) {
    for (const ManifestFile& listed : part.files) {
      const FileDigest* file = digests.find(listed.path);
      if (!file || file->kind != FolderEntryKind::File)
        return invalid(dir + "/" + listed.path + ": missing; bundle.json lists it; run ptbundle verify");
      if (file->sha256 != listed.sha256 || file->size != listed.size)
        return invalid(dir + "/" + listed.path + ": SHA-256 is " + file->sha256 + "; bundle.json records " + listed.sha256 +
                       "; run ptbundle verify, then export the part again before signing");
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

  // verify reads one signature per bundle, and a second one would sign the
  // first as one of the bundle's files: refused, naming the one there.
  for (const std::string& other : find_signature_files(dir)) {
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
  PTB_TRY(FolderDigests digests, hash_folder(dir, hashing));
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
  PTB_CHECK(write_file_atomically(path, json));

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
  std::vector<std::string> removed;
  for (const std::string& name : find_signature_files(folder.string())) {
    const fs::path path = folder / name;
    if (fs::remove(path, ec)) removed.push_back(path.string());
  }
  return removed;
}

}  // namespace ptb
