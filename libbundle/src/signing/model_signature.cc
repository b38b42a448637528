// Writing the model-signing format: the in-toto statement of a folder, the
// DSSE pre-authentication encoding, the Sigstore bundle around them.
#include "ptbundle/signing/model_signature.h"

#include <algorithm>
#include <filesystem>

#include "ptbundle/base/file.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

bool hex_to_digest(const std::string& hex, Digest& out) {
  if (hex.size() != 64) return false;
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

const std::vector<std::string>& git_ignore_paths() {
  static const std::vector<std::string> kPaths = {".git", ".gitattributes", ".github", ".gitignore"};
  return kPaths;
}

namespace detail {

// SHA-256 over the raw digests of the resources, in their listed order: the
// subject digest model_signing checks before it trusts the list.
Result<std::string> root_digest(const std::vector<SignedResource>& resources, const std::string& where) {
  Sha256 hasher;
  for (size_t i = 0; i < resources.size(); ++i) {
    Digest digest{};
    if (!hex_to_digest(resources[i].sha256, digest))
      return invalid(where + ": predicate.resources[" + std::to_string(i) + "].digest: expected 64 lowercase hex digits");
    hasher.update(Bytes(digest.data(), digest.size()));
  }
  return to_hex(hasher.finish());
}


}  // namespace detail

Result<SignedStatement> statement_for(const std::string& subject_name, const FolderDigests& digests,
                                      std::vector<std::string> ignore_paths) {
  SignedStatement statement;
  statement.subject_name = is_utf8(subject_name) ? subject_name : std::string("bundle");
  statement.ignore_paths = std::move(ignore_paths);
  for (const FileDigest& file : digests.files) {
    if (file.kind == FolderEntryKind::Symlink)
      return invalid(file.path + ": is a symbolic link; a signed bundle holds regular files only (model_signing refuses links)");
    if (file.kind != FolderEntryKind::File || !file.error.empty())
      return invalid(file.path + ": " + (file.error.empty() ? std::string("not a regular file") : file.error) +
                     "; every file of the folder is signed");
    if (!is_utf8(file.path)) return invalid(printable(file.path) + ": the file name is not UTF-8; rename it");
    statement.resources.push_back({file.path, file.sha256});
  }
  if (statement.resources.empty()) return invalid("the folder holds no file to sign");
  PTB_TRY(statement.subject_sha256, detail::root_digest(statement.resources, "statement"));
  return statement;
}

std::string statement_payload(const SignedStatement& statement) {
  Json subject;
  subject["name"] = statement.subject_name;
  subject["digest"] = {{"sha256", statement.subject_sha256}};
  Json serialization;
  serialization["method"] = statement.method;
  serialization["hash_type"] = statement.hash_type;
  serialization["allow_symlinks"] = statement.allow_symlinks;
  serialization["ignore_paths"] = statement.ignore_paths;
  Json resources = Json::array();
  for (const SignedResource& resource : statement.resources)
    resources.push_back({{"algorithm", "sha256"}, {"digest", resource.sha256}, {"name", resource.name}});
  Json document;
  document["_type"] = kInTotoStatementType;
  document["subject"] = Json::array({subject});
  document["predicateType"] = kModelSigningPredicateType;
  document["predicate"] = {{"serialization", serialization}, {"resources", resources}};
  // Non-ASCII as \u escapes, like Python's JSON printers by default.
  return document.dump(2, ' ', true);
}

std::vector<uint8_t> dsse_pae(Bytes payload) {
  const std::string type = kInTotoPayloadType;
  const std::string head = "DSSEv1 " + std::to_string(type.size()) + " " + type + " " + std::to_string(payload.size()) + " ";
  std::vector<uint8_t> out(head.begin(), head.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::string sigstore_bundle_json(const std::string& key_hint, Bytes payload, Bytes signature) {
  Json bundle;
  bundle["mediaType"] = kSigstoreBundleMediaType;
  bundle["verificationMaterial"] = {{"publicKey", {{"hint", key_hint}}}, {"tlogEntries", Json::array()}};
  bundle["dsseEnvelope"] = {{"payload", base64_encode(payload)},
                            {"payloadType", kInTotoPayloadType},
                            {"signatures", Json::array({{{"sig", base64_encode(signature)}, {"keyid", ""}}})}};
  return bundle.dump();
}

std::vector<std::string> find_signature_files(const BundleDir& dir) {
  std::vector<std::string> out;
  auto names = dir.list("");
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".sig") != 0) continue;
    if (dir.kind(name).value_or(BundleDir::Kind::Missing) != BundleDir::Kind::File) continue;
    auto file = MappedFile::open_in(dir, name);
    if (!file.ok() || file->size() > kMaxSignatureFileBytes) continue;
    const Bytes bytes = file->bytes();
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text.find(kSigstoreBundleMediaType) != std::string_view::npos) out.push_back(name);
  }
  return out;
}

std::optional<UnrecognizedSignature> unrecognized_signature_file(const BundleDir& dir) {
  auto names = dir.list("");
  if (!names.ok()) return std::nullopt;
  std::vector<std::string> candidates;
  for (const std::string& name : *names) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".sig") == 0) candidates.push_back(name);
  }
  std::stable_partition(candidates.begin(), candidates.end(), [](const std::string& name) { return name == kDefaultSignatureName; });
  for (const std::string& name : candidates) {
    // A link or a folder is never read as a signature (the bundle is unsigned).
    if (dir.kind(name).value_or(BundleDir::Kind::Missing) != BundleDir::Kind::File) continue;
    auto file = MappedFile::open_in(dir, name);
    if (!file.ok()) return UnrecognizedSignature{name, "cannot be read: " + file.error().message};
    if (file->size() > kMaxSignatureFileBytes)
      return UnrecognizedSignature{name, "is " + std::to_string(file->size()) + " bytes; a signature file is at most " +
                                             std::to_string(kMaxSignatureFileBytes) + " bytes"};
    const Bytes bytes = file->bytes();
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text.find(kSigstoreBundleMediaType) == std::string_view::npos)
      return UnrecognizedSignature{name, "is no Sigstore bundle (its mediaType " + std::string(kSigstoreBundleMediaType) +
                                             " is missing)"};
  }
  return std::nullopt;
}

std::optional<std::string> signature_to_check(const BundleDir& dir) {
  const std::vector<std::string> signatures = find_signature_files(dir);
  if (signatures.empty()) return std::nullopt;
  const bool has_default = std::find(signatures.begin(), signatures.end(), kDefaultSignatureName) != signatures.end();
  return has_default ? std::string(kDefaultSignatureName) : signatures.front();
}

}  // namespace ptb
