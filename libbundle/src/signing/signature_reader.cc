// Reading a signature file written by ptbundle or model_signing, with every
// field checked before it is used: the file is hostile until its signature
// verifies, and its statement is trusted only after that.
#include <algorithm>

#include "ptbundle/signing/model_signature.h"

#include "ptbundle/base/file.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"

namespace ptb {

namespace detail {
Result<std::string> root_digest(const std::vector<SignedResource>& resources, const std::string& where);
}  // namespace detail

namespace {

Result<Json> parse_json(Bytes text, const std::string& where) {
  return parse_json_bounded(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), where,
                            "a signature");
}

// The member `key` of object `parent` (at `at`), which must have `type`.
Result<const Json*> member(const Json& parent, const std::string& at, const char* key, Json::value_t type,
                           const char* expected, const std::string& path) {
  const std::string where = path + ": " + (at.empty() ? std::string(key) : at + "." + key);
  if (!parent.is_object()) return invalid(path + ": " + at + ": not an object; expected " + expected);
  auto it = parent.find(key);
  if (it == parent.end()) return invalid(where + ": missing; expected " + expected);
  const bool ok = it->type() == type || (type == Json::value_t::number_unsigned && it->is_number_integer());
  if (!ok) return invalid(where + ": is " + std::string(it->type_name()) + "; expected " + expected);
  return &*it;
}

Result<std::string> string_member(const Json& parent, const std::string& at, const char* key, const std::string& path) {
  PTB_TRY(const Json* value, member(parent, at, key, Json::value_t::string, "a string", path));
  return value->get<std::string>();
}

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A resource or ignore path: relative, '/'-separated, no empty, "." or ".." component.
bool is_safe_relative(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos || !is_utf8(name)) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = std::string_view(name).substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

Result<SignedStatement> parse_statement(const Json& json, const std::string& path) {
  const std::string at = path + ": statement";
  SignedStatement out;
  PTB_TRY(std::string type, string_member(json, "", "_type", at));
  if (type != kInTotoStatementType) return invalid(at + ": _type is \"" + printable(type) + "\"; expected " + kInTotoStatementType);
  PTB_TRY(std::string predicate_type, string_member(json, "", "predicateType", at));
  if (predicate_type != kModelSigningPredicateType)
    return invalid(at + ": predicateType is \"" + printable(predicate_type) + "\"; expected " + kModelSigningPredicateType +
                   " (model_signing 1.0 and later; older signatures are not read)");
  PTB_TRY(const Json* subjects, member(json, "", "subject", Json::value_t::array, "a list of one subject", at));
  if (subjects->size() != 1) return invalid(at + ": subject: " + std::to_string(subjects->size()) + " entries; expected 1");
  PTB_TRY(out.subject_name, string_member((*subjects)[0], "subject[0]", "name", at));
  PTB_TRY(const Json* digest, member((*subjects)[0], "subject[0]", "digest", Json::value_t::object, "an object", at));
  PTB_TRY(out.subject_sha256, string_member(*digest, "subject[0].digest", "sha256", at));
  if (!is_hex64(out.subject_sha256)) return invalid(at + ": subject[0].digest.sha256: expected 64 lowercase hex digits");

  PTB_TRY(const Json* predicate, member(json, "", "predicate", Json::value_t::object, "an object", at));
  PTB_TRY(const Json* serialization, member(*predicate, "predicate", "serialization", Json::value_t::object, "an object", at));
  PTB_TRY(out.method, string_member(*serialization, "predicate.serialization", "method", at));
  if (out.method != "files")
    return invalid(at + ": predicate.serialization.method is \"" + printable(out.method) +
                   "\"; expected \"files\" (ptbundle verifies signatures of whole files, not of shards)");
  PTB_TRY(out.hash_type, string_member(*serialization, "predicate.serialization", "hash_type", at));
  if (out.hash_type != "sha256")
    return invalid(at + ": predicate.serialization.hash_type is \"" + printable(out.hash_type) + "\"; expected \"sha256\"");
  PTB_TRY(const Json* links, member(*serialization, "predicate.serialization", "allow_symlinks", Json::value_t::boolean, "true or false", at));
  out.allow_symlinks = links->get<bool>();
  if (serialization->contains("ignore_paths")) {
    PTB_TRY(const Json* ignore, member(*serialization, "predicate.serialization", "ignore_paths", Json::value_t::array, "a list of paths", at));
    for (size_t i = 0; i < ignore->size(); ++i) {
      const Json& entry = (*ignore)[i];
      std::string name = entry.is_string() ? entry.get<std::string>() : std::string();
      while (name.size() > 1 && name.back() == '/') name.pop_back();
      if (!is_safe_relative(name))
        return invalid(at + ": predicate.serialization.ignore_paths[" + std::to_string(i) + "]: expected a relative path inside the folder");
      out.ignore_paths.push_back(name);
    }
  }
  PTB_TRY(const Json* resources, member(*predicate, "predicate", "resources", Json::value_t::array, "a list of files", at));
  for (size_t i = 0; i < resources->size(); ++i) {
    const std::string item = "predicate.resources[" + std::to_string(i) + "]";
    SignedResource resource;
    PTB_TRY(resource.name, string_member((*resources)[i], item, "name", at));
    PTB_TRY(std::string algorithm, string_member((*resources)[i], item, "algorithm", at));
    PTB_TRY(resource.sha256, string_member((*resources)[i], item, "digest", at));
    if (algorithm != "sha256") return invalid(at + ": " + item + ".algorithm is \"" + printable(algorithm) + "\"; expected \"sha256\"");
    if (!is_safe_relative(resource.name))
      return invalid(at + ": " + item + ".name \"" + printable(resource.name) + "\": expected a relative path inside the folder");
    if (!is_hex64(resource.sha256)) return invalid(at + ": " + item + ".digest: expected 64 lowercase hex digits");
    out.resources.push_back(std::move(resource));
  }
  std::vector<std::string> names;
  for (const auto& resource : out.resources) names.push_back(resource.name);
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end())
    return invalid(at + ": predicate.resources lists \"" + printable(*dup) + "\" twice");
  // model_signing checks this before it trusts the list; so does ptbundle.
  PTB_TRY(std::string root, detail::root_digest(out.resources, at));
  if (root != out.subject_sha256)
    return invalid(at + ": subject[0].digest.sha256 is " + out.subject_sha256 + " but the resources hash to " + root +
                   "; the statement is inconsistent");
  return out;
}

}  // namespace

Result<SignatureFile> parse_signature(Bytes data, const std::string& path) {
  if (data.size() > kMaxSignatureFileBytes)
    return invalid(path + ": " + std::to_string(data.size()) + " bytes; expected a signature file under 1 MiB");
  PTB_TRY(Json bundle, parse_json(data, path));
  SignatureFile out;
  out.path = path;
  PTB_TRY(std::string media_type, string_member(bundle, "", "mediaType", path));
  if (media_type != kSigstoreBundleMediaType)
    return invalid(path + ": mediaType is \"" + printable(media_type) + "\"; expected " + kSigstoreBundleMediaType);
  PTB_TRY(const Json* material, member(bundle, "", "verificationMaterial", Json::value_t::object, "an object", path));
  if (material->contains("publicKey")) {
    PTB_TRY(const Json* key, member(*material, "verificationMaterial", "publicKey", Json::value_t::object, "an object", path));
    if (key->contains("hint") && !(*key)["hint"].is_null()) {
      PTB_TRY(std::string hint, string_member(*key, "verificationMaterial.publicKey", "hint", path));
      if (!hint.empty()) out.key_hint = hint;
    }
  } else if (material->contains("certificate") || material->contains("x509CertificateChain")) {
    return invalid(path + ": signed with a certificate; ptbundle verifies signatures made with a key (model_signing sign key)");
  }
  PTB_TRY(const Json* envelope, member(bundle, "", "dsseEnvelope", Json::value_t::object, "a DSSE envelope", path));
  PTB_TRY(std::string payload_type, string_member(*envelope, "dsseEnvelope", "payloadType", path));
  if (payload_type != kInTotoPayloadType)
    return invalid(path + ": dsseEnvelope.payloadType is \"" + printable(payload_type) + "\"; expected " + kInTotoPayloadType);
  PTB_TRY(std::string payload, string_member(*envelope, "dsseEnvelope", "payload", path));
  PTB_TRY(out.payload, base64_decode(payload, path + ": dsseEnvelope.payload"));
  PTB_TRY(const Json* signatures, member(*envelope, "dsseEnvelope", "signatures", Json::value_t::array, "a list of one signature", path));
  if (signatures->size() != 1)
    return invalid(path + ": dsseEnvelope.signatures: " + std::to_string(signatures->size()) + " entries; expected 1");
  PTB_TRY(std::string sig, string_member((*signatures)[0], "dsseEnvelope.signatures[0]", "sig", path));
  PTB_TRY(out.signature, base64_decode(sig, path + ": dsseEnvelope.signatures[0].sig"));
  if (out.signature.empty() || out.signature.size() > 256)
    return invalid(path + ": dsseEnvelope.signatures[0].sig: " + std::to_string(out.signature.size()) +
                   " bytes; expected a DER ECDSA signature (70 to 139 bytes)");
  // The statement is judged after the signature: a changed payload is first
  // of all a signature that does not verify.
  auto json = parse_json(Bytes(out.payload.data(), out.payload.size()), path + ": dsseEnvelope.payload");
  if (!json.ok()) {
    out.statement_error = json.error().message;
    return out;
  }
  auto statement = parse_statement(*json, path);
  if (statement.ok()) out.statement = std::move(*statement);
  else out.statement_error = statement.error().message;
  return out;
}

Result<SignatureFile> read_signature_file(const std::string& path) {
  PTB_TRY(auto file, MappedFile::open(path));
  return parse_signature(file.bytes(), path);
}

Result<SignatureFile> read_signature_file(const BundleDir& dir, const std::string& name) {
  PTB_TRY(auto file, MappedFile::open_in(dir, name));
  return parse_signature(file.bytes(), dir.display(name));
}

Result<const PublicKey*> verify_signature(const SignatureFile& signature, const std::vector<PublicKey>& keys) {
  if (keys.empty()) return usage_error(signature.path + ": no public key given to verify the signature with");
  const std::vector<uint8_t> message = dsse_pae(Bytes(signature.payload.data(), signature.payload.size()));
  const Bytes sig(signature.signature.data(), signature.signature.size());
  std::vector<std::string> tried;
  bool hint_matched = false;
  for (const PublicKey& key : keys) {
    // The hint is only a hint: a key whose fingerprint differs is not tried,
    // as model_signing refuses it; the signature decides either way.
    if (signature.key_hint && *signature.key_hint != key.fingerprint()) {
      tried.push_back(key.source() + " (fingerprint " + key.fingerprint().substr(0, 16) + "...)");
      continue;
    }
    if (key.verifies(Bytes(message.data(), message.size()), sig)) return &key;
    hint_matched = true;
    tried.push_back(key.source() + " (" + key.curve() + ": the signature does not verify)");
  }
  std::string list;
  for (const auto& item : tried) list += (list.empty() ? "" : ", ") + item;
  if (signature.key_hint && !hint_matched)
    return invalid(signature.path + ": signed by the key with fingerprint " + *signature.key_hint +
                   ", which none of the keys given is (" + list + "); the payload or the signature was changed, or "
                   "give the signer's public key");
  return invalid(signature.path + ": the signature verifies with none of the keys given (" + list +
                 "): the payload or the signature was changed after signing, or another key signed it");
}

}  // namespace ptb
