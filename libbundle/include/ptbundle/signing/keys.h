// The elliptic-curve keys a bundle is signed with, through OpenSSL: the
// curves the OpenSSF model_signing tool accepts (NIST P-256, P-384, P-521),
// each signing with the SHA-2 hash of its size (SHA-256, SHA-384, SHA-512),
// as Sigstore specifies for these curves. Any other key type or curve (RSA,
// Ed25519, P-192, secp256k1) is refused with its name.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct EcKeyHandle;  // wraps OpenSSL's EVP_PKEY

class PublicKey {
 public:
  // A PEM or DER SubjectPublicKeyInfo ("-----BEGIN PUBLIC KEY-----"), as
  // `openssl pkey -pubout` writes it. `source` names it in errors.
  static Result<PublicKey> from_bytes(Bytes data, const std::string& source);
  static Result<PublicKey> load(const std::string& path);

  const std::string& source() const { return source_; }  // the file it came from
  const std::string& curve() const { return curve_; }    // "P-256", "P-384", "P-521"
  const std::string& hash() const { return hash_; }      // "SHA-256", ...
  // The SubjectPublicKeyInfo in PEM, point uncompressed: the text whose
  // SHA-256 is the fingerprint.
  const std::string& pem() const { return pem_; }
  // SHA-256 (hex) of pem(): the key hint model_signing records in the
  // signature, and the fingerprint ptbundle shows. The same as
  // `openssl pkey -pubin -in PUB.pem -pubout | sha256sum`.
  const std::string& fingerprint() const { return fingerprint_; }

  // True when `signature` (DER ECDSA-Sig-Value) signs `message` with the curve's hash.
  bool verifies(Bytes message, Bytes signature) const;

 private:
  friend class SigningKey;
  static Result<PublicKey> make(std::shared_ptr<EcKeyHandle> key, const std::string& source);
  std::shared_ptr<EcKeyHandle> key_;
  std::string source_, curve_, hash_, pem_, fingerprint_;
};

class SigningKey {
 public:
  // A PEM private key (PKCS#8 or traditional "EC PRIVATE KEY"), decrypted
  // with `password` when it is encrypted. Never asks on the terminal.
  static Result<SigningKey> load(const std::string& path, const std::optional<std::string>& password);

  const PublicKey& public_key() const { return public_; }
  // DER ECDSA-Sig-Value over `message` hashed with the curve's hash.
  Result<std::vector<uint8_t>> sign(Bytes message) const;

 private:
  std::shared_ptr<EcKeyHandle> key_;
  PublicKey public_;
};

// The first line of `path` (a trailing newline is not part of the password),
// as model_signing's --password is given.
Result<std::string> read_password_file(const std::string& path);

// Every public key in `dir`: files named *.pem or *.pub, in name order. A
// file among them that is not a supported public key is an error.
Result<std::vector<PublicKey>> load_public_keys_dir(const std::string& dir);

}  // namespace ptb
