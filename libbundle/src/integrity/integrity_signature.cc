// A bundle's signature, checked before anything else: it verifies with one of
// the keys given, then the folder holds exactly the files it lists, with the
// digests it records. Then the keys ExecuTorch names by the SHA-256 of their
// bytes. All from the digests computed once for the whole folder.
#include <algorithm>
#include <map>

#include "integrity/integrity_internal.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb::detail {
namespace {

std::string in_folder(const std::string& dir, const std::string& relative) {
  return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + relative;
}

bool ignored_by(const SignedStatement& statement, const std::string& path) {
  for (const std::string& ignored : statement.ignore_paths) {
    if (path_is_under(path, ignored)) return true;
  }
  return false;
}

}  // namespace

// Every file against the statement; each problem names its file.
bool check_signed_files(const std::string& dir, const SignedStatement& statement, const FolderDigests& digests,
                        CheckList& checks, bool whole_folder) {
  std::map<std::string, std::string> signed_files;  // name -> sha256
  std::multimap<std::string, std::string> by_digest;
  for (const SignedResource& resource : statement.resources) {
    signed_files[resource.name] = resource.sha256;
    by_digest.emplace(resource.sha256, resource.name);
  }
  size_t problems = 0, files = 0;
  uint64_t bytes = 0;
  std::map<std::string, bool> seen;
  for (const FileDigest& file : digests.files) {
    if (ignored_by(statement, file.path)) continue;
    // An interrupted writer's temporary file (a killed sign's among them) or
    // its lock file is no file of the bundle: the leftover check warns about
    // it, and the next writer removes it.
    if (is_temporary_name(file.path.substr(file.path.rfind('/') + 1)) || file.path == kStagingMarkerName ||
        file.path == kLockFileName)
      continue;
    const std::string path = in_folder(dir, file.path);
    auto listed = signed_files.find(file.path);
    if (listed != signed_files.end()) seen[file.path] = true;
    if (file.kind == FolderEntryKind::Symlink) {
      ++problems;
      checks.fail(checks::kSignedFiles, path, "is a symbolic link; a signed bundle holds regular files only; replace it with the file");
      continue;
    }
    if (file.kind == FolderEntryKind::File && listed == signed_files.end()) {
      ++problems;
      std::string renamed;
      for (auto [it, end] = by_digest.equal_range(file.sha256); it != end; ++it) {
        if (!digests.find(it->second)) renamed = it->second;
      }
      if (file.sha256.empty()) {  // not hashed: neither bundle.json nor the signature lists it
        checks.fail(checks::kSignedFiles, path,
                    "not in the signature: the file was added or renamed after signing; remove it or rename it back, or "
                    "sign the bundle again");
        continue;
      }
      checks.fail(checks::kSignedFiles, path,
                  renamed.empty() ? "not in the signature: the file was added after signing; remove it, or sign the bundle again"
                                  : "not in the signature, which lists these bytes as " + renamed +
                                        ": the file was renamed after signing; rename it back, or sign the bundle again");
      continue;
    }
    if (file.kind != FolderEntryKind::File || !file.error.empty()) {
      ++problems;
      checks.fail(checks::kSignedFiles, path, (file.error.empty() ? std::string("not a regular file") : file.error) +
                                                  "; every file of a signed bundle is checked against the signature");
      continue;
    }
    if (listed->second != file.sha256) {
      ++problems;
      checks.fail(checks::kSignedFiles, path,
                  "SHA-256 is " + file.sha256 + "; the signature records " + listed->second +
                      ": the file changed after signing; restore it, or sign the bundle again");
      continue;
    }
    ++files;
    bytes += file.size;
  }
  for (const SignedResource& resource : statement.resources) {
    if (seen.count(resource.name) || ignored_by(statement, resource.name) || !whole_folder) continue;
    ++problems;
    checks.fail(checks::kSignedFiles, in_folder(dir, resource.name),
                "missing: the signature lists it; restore it, or sign the bundle again");
  }
  if (problems == 0 && whole_folder) {
    checks.pass(checks::kSignedFiles, dir,
                std::to_string(files) + " file(s), " + std::to_string(bytes) + " bytes, exactly as signed: none added, missing or changed");
  } else if (problems == 0) {
    checks.pass(checks::kSignedFiles, dir,
                std::to_string(files) + " file(s) checked, " + std::to_string(bytes) + " bytes, each as signed");
  }
  return problems == 0;
}

void check_signature(const BundleDir& bundle, const std::optional<std::string>& signature_name, const FolderDigests& digests,
                     const IntegrityOptions& options, CheckList& checks, SignatureSummary& summary, bool whole_folder) {
  const std::string& dir = bundle.path();
  if (!signature_name) {
    // A signature file that is there but broken is named for what is wrong
    // with it, not taken for no signature.
    if (auto broken = unrecognized_signature_file(bundle);
        broken && (broken->name == kDefaultSignatureName || options.require_signature || !options.keys.empty())) {
      checks.fail(checks::kSignature, bundle.display(broken->name),
                  broken->why + "; expected the signature ptbundle sign writes (a Sigstore bundle of at most " +
                      std::to_string(kMaxSignatureFileBytes) + " bytes); sign the bundle again");
      return;
    }
    if (options.require_signature && options.keys.empty()) {
      checks.fail(checks::kSignature, dir,
                  "not signed: no .sig signature file in the folder, and --require-signature requires one; sign it with "
                  "ptbundle sign, and verify it with --key");
    } else if (options.keys.empty()) {
      checks.skip(checks::kSignature, dir, "not signed (no .sig file in the folder; ptbundle sign makes one)");
    } else {
      checks.fail(checks::kSignature, dir,
                  "not signed: no .sig signature file in the folder, and --key requires one; sign it with ptbundle sign");
    }
    return;
  }
  const std::string path = bundle.display(*signature_name);
  summary.file = path;
  auto read = read_signature_file(bundle, *signature_name);
  if (!read.ok()) {
    checks.fail(checks::kSignature, path, read.error().message);
    return;
  }
  const SignatureFile& signature = *read;
  summary.key_fingerprint = signature.key_hint;
  if (options.keys.empty() && options.require_signature) {
    checks.fail(checks::kSignature, path,
                "claims to be signed by the key with fingerprint " + signature.key_hint.value_or("(none recorded)") +
                    " (an unauthenticated hint in the file), but no key was given to check it, and "
                    "--require-signature requires a checked signature; give the public key with --key or --keys-dir");
    return;
  }
  if (options.keys.empty()) {
    checks.skip(checks::kSignature, path,
                "claims to be signed by the key with fingerprint " + signature.key_hint.value_or("(none recorded)") +
                    " (an unauthenticated hint in the file); not checked: no key given; give the public key with "
                    "--key or --keys-dir");
    return;
  }
  auto key = verify_signature(signature, options.keys);
  if (!key.ok()) {
    checks.fail(checks::kSignature, path, key.error().message);
    return;
  }
  summary.key = (*key)->source();
  summary.curve = (*key)->curve();
  if (!signature.statement_error.empty()) {
    checks.fail(checks::kSignature, path, signature.statement_error);
    return;
  }
  checks.pass(checks::kSignature, path,
              "ECDSA " + (*key)->curve() + " with " + (*key)->hash() + ", verified with " + (*key)->source() +
                  " (fingerprint " + (*key)->fingerprint() + "); it lists " +
                  std::to_string(signature.statement.resources.size()) + " file(s)");
  summary.verified = check_signed_files(dir, signature.statement, digests, checks, whole_folder);
}

void check_content_keys(const std::string& dir, const FolderDigests& digests, CheckList& checks) {
  size_t keys = 0, problems = 0;
  for (const FileDigest& file : digests.files) {
    if (!file.error.empty()) continue;
    for (const ContentKeyDigest& key : file.content_keys) {
      ++keys;
      if (key.matches()) continue;
      ++problems;
      checks.fail(checks::kContentKey, in_folder(dir, file.path) + ": " + key.where + " '" + key.key + "'",
                  "its " + std::to_string(key.size) + " bytes at offset " + std::to_string(key.offset) + " hash to " +
                      key.actual + ", not to the SHA-256 the key names: the blob was replaced after export; export the part again");
    }
  }
  if (keys > 0 && problems == 0) {
    checks.pass(checks::kContentKey, dir,
                std::to_string(keys) + " content-addressed key(s) (<sha256>_so_blob, <sha256>_weights_blob): each names the SHA-256 of its bytes");
  }
}

FolderReading folder_reading(const BundleDir& dir, const Manifest* manifest, unsigned threads) {
  FolderReading reading;
  reading.signature_name = signature_to_check(dir);
  reading.hashing.ignore = git_ignore_paths();
  if (reading.signature_name) reading.hashing.ignore.push_back(*reading.signature_name);
  reading.hashing.threads = threads;
  // Only what bundle.json or the signature lists is hashed: any other file
  // is reported by its name alone (unlisted, or not in the signature).
  reading.hashing.hash_only.emplace();
  if (manifest) {
    for (const ManifestPart& part : manifest->parts) {
      for (const ManifestFile& file : part.files) {
        reading.hashing.expected_sizes[file.path] = file.size;
        reading.hashing.hash_only->insert(file.path);
      }
    }
    if (manifest->tune) {
      reading.hashing.expected_sizes[manifest->tune->path] = manifest->tune->size;
      reading.hashing.hash_only->insert(manifest->tune->path);
    }
  }
  if (reading.signature_name) {
    // Read again by check_signature, which reports what is wrong with it.
    if (auto signature = read_signature_file(dir, *reading.signature_name); signature.ok()) {
      for (const SignedResource& resource : signature->statement.resources) reading.hashing.hash_only->insert(resource.name);
    }
  }
  return reading;
}

}  // namespace ptb::detail
