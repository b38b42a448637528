// Signatures in the format of the OpenSSF Model Signing specification, as
// its reference tool model_signing (sigstore/model-transparency, v1.x) writes
// them when signing with an elliptic-curve key, so that each tool verifies
// the other's signatures. The layers, outside in:
//
// - A Sigstore bundle, JSON: {"mediaType":
//   "application/vnd.dev.sigstore.bundle.v0.3+json", "verificationMaterial":
//   {"publicKey": {"hint": H}, "tlogEntries": []}, "dsseEnvelope": {...}},
//   where H is the SHA-256 (hex) of the signer's public key in PEM
//   (PublicKey::fingerprint). No transparency log entries: a key signature.
// - A DSSE envelope: {"payload": base64 of the statement, "payloadType":
//   "application/vnd.in-toto+json", "signatures": [{"sig": base64 of the DER
//   ECDSA signature, "keyid": ""}]}. The signature is over DSSE's
//   pre-authentication encoding "DSSEv1 <len type> <type> <len payload>
//   <payload>" (lengths in decimal bytes), hashed with the curve's hash.
// - An in-toto Statement v1: "_type" "https://in-toto.io/Statement/v1", one
//   subject {"name": the folder's name, "digest": {"sha256": D}},
//   "predicateType" "https://model_signing/signature/v1.0", and a predicate
//   {"serialization": {"method": "files", "hash_type": "sha256",
//   "allow_symlinks": false, "ignore_paths": [...]}, "resources": [{"algorithm":
//   "sha256", "digest": hex, "name": relative path}, ...]}: every file, sorted
//   by path components, and D the SHA-256 of the resources' raw 32-byte
//   digests concatenated in that order.
//
// Everything read from a signature file is bounded and checked: at most
// 1 MiB, JSON nested at most 32 deep, every field of the expected type,
// base64 strictly decoded, paths relative without "..".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/signing/keys.h"

namespace ptb {

class BundleDir;

inline constexpr const char* kDefaultSignatureName = "bundle.sig";
inline constexpr const char* kSigstoreBundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr const char* kInTotoPayloadType = "application/vnd.in-toto+json";
inline constexpr const char* kInTotoStatementType = "https://in-toto.io/Statement/v1";
inline constexpr const char* kModelSigningPredicateType = "https://model_signing/signature/v1.0";
inline constexpr uint64_t kMaxSignatureFileBytes = 1 << 20;

// Paths model_signing leaves out of every signature besides the signature
// file itself.
const std::vector<std::string>& git_ignore_paths();  // .git, .gitattributes, .github, .gitignore

struct SignedResource {
  std::string name;    // relative path, '/'-separated
  std::string sha256;  // 64 lowercase hex digits
};

struct SignedStatement {
  std::string subject_name;
  std::string subject_sha256;
  std::string method = "files";
  std::string hash_type = "sha256";
  bool allow_symlinks = false;
  std::vector<std::string> ignore_paths;
  std::vector<SignedResource> resources;  // in the order listed
};

// The statement's JSON text, as signed: two-space indentation like
// model_signing's protobuf JSON printer.
std::string statement_payload(const SignedStatement& statement);
// The statement for `digests` (every regular file of the folder), with the
// root digest computed. Errors name the file (a link, a non-UTF-8 name).
Result<SignedStatement> statement_for(const std::string& subject_name, const FolderDigests& digests,
                                      std::vector<std::string> ignore_paths);
// DSSE's pre-authentication encoding of `payload` with the in-toto payload type.
std::vector<uint8_t> dsse_pae(Bytes payload);

// A signature file read and checked for form; not yet verified.
struct SignatureFile {
  std::string path;
  std::optional<std::string> key_hint;  // verificationMaterial.publicKey.hint
  std::vector<uint8_t> payload;         // the statement's bytes, as signed
  std::vector<uint8_t> signature;       // DER
  // Parsed from payload, root digest checked; trusted only once the
  // signature verified. When the payload is no valid statement,
  // statement_error says why (and statement is empty).
  SignedStatement statement;
  std::string statement_error;
};

// Reads and checks `path`. Errors say what is wrong where ("bundle.sig:
// dsseEnvelope.payload: invalid base64 at character 17").
Result<SignatureFile> read_signature_file(const std::string& path);
// The signature file `name` of a bundle folder, read through the folder's
// descriptor with no link followed, as every other file inside a bundle.
Result<SignatureFile> read_signature_file(const BundleDir& dir, const std::string& name);
Result<SignatureFile> parse_signature(Bytes data, const std::string& path);

// Which of `keys` made the signature: the key whose fingerprint is the hint
// (or, with no hint, any), whose signature over the PAE of the payload
// verifies. An error says why none did.
Result<const PublicKey*> verify_signature(const SignatureFile& signature, const std::vector<PublicKey>& keys);

// The compact JSON of the Sigstore bundle, as model_signing writes it.
std::string sigstore_bundle_json(const std::string& key_hint, Bytes payload, Bytes signature);

// Base64, standard alphabet with padding; decoding also takes the URL-safe
// alphabet and missing padding (protobuf's JSON reader does), nothing else.
std::string base64_encode(Bytes data);
Result<std::vector<uint8_t>> base64_decode(std::string_view text, const std::string& where);

// Top-level regular files of the bundle folder named *.sig that hold a
// Sigstore bundle, in name order. A symlink named *.sig is not one.
std::vector<std::string> find_signature_files(const BundleDir& dir);
// The one signature verify and inspect read: bundle.sig where present, else
// the first found; nullopt when the folder holds none.
std::optional<std::string> signature_to_check(const BundleDir& dir);
// A "*.sig" file of the folder's top level that find_signature_files does not
// take for a signature (bundle.sig first), and why: larger than
// kMaxSignatureFileBytes, or no Sigstore bundle; nullopt when there is none.
// Links and folders are not read: they are no signature.
struct UnrecognizedSignature {
  std::string name;
  std::string why;
};
std::optional<UnrecognizedSignature> unrecognized_signature_file(const BundleDir& dir);

}  // namespace ptb
