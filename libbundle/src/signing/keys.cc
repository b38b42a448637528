// EC keys through OpenSSL 3: loading (PEM/DER, encrypted PEM with a
// password), the curve check, the PEM text the fingerprint is taken over,
// signing and verifying DER ECDSA signatures.
#include "ptbundle/signing/keys.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "ptbundle/base/sha256.h"

namespace ptb {

struct EcKeyHandle {
  EVP_PKEY* pkey = nullptr;
  ~EcKeyHandle() { EVP_PKEY_free(pkey); }
};

namespace {

namespace fs = std::filesystem;

// Keys are small; anything larger is not a key file.
constexpr uint64_t kMaxKeyFileBytes = 64 << 10;

struct Curve {
  const char* openssl_name;
  const char* name;
  const char* hash;
};
constexpr Curve kCurves[] = {
    {"prime256v1", "P-256", "SHA-256"},
    {"secp384r1", "P-384", "SHA-384"},
    {"secp521r1", "P-521", "SHA-512"},
};

std::string openssl_reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

const EVP_MD* digest_of(const std::string& hash) {
  if (hash == "SHA-384") return EVP_sha384();
  if (hash == "SHA-512") return EVP_sha512();
  return EVP_sha256();
}

Result<std::string> read_small_file(const std::string& path, const char* what) {
  PTB_TRY(auto file, MappedFile::open(path));
  if (file.size() > kMaxKeyFileBytes)
    return invalid(path + ": " + std::to_string(file.size()) + " bytes; expected " + what + " (a few hundred bytes)");
  Bytes bytes = file.bytes();
  return std::string(bytes.begin(), bytes.end());
}

// The type and curve of `pkey`, refused unless model_signing accepts them.
Result<const Curve*> check_curve(EVP_PKEY* pkey, const std::string& source) {
  const int type = EVP_PKEY_get_base_id(pkey);
  if (type != EVP_PKEY_EC) {
    const char* name = type == EVP_PKEY_RSA ? "RSA" : type == EVP_PKEY_ED25519 ? "Ed25519" : type == EVP_PKEY_ED448 ? "Ed448"
                       : type == EVP_PKEY_DSA ? "DSA" : EVP_PKEY_get0_type_name(pkey);
    return invalid(source + ": " + std::string(name ? name : "unknown") +
                   " key; expected an elliptic-curve key on P-256, P-384 or P-521 (what model_signing signs with)");
  }
  char group[64] = {};
  size_t length = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &length) != 1) {
    ERR_clear_error();
    return invalid(source + ": elliptic-curve key without a named curve; expected P-256, P-384 or P-521");
  }
  for (const Curve& curve : kCurves) {
    if (std::string_view(group) == curve.openssl_name) return &curve;
  }
  return invalid(source + ": elliptic-curve key on curve " + group + "; expected P-256, P-384 or P-521");
}

// The public half of `pkey` as PEM SubjectPublicKeyInfo with the point
// uncompressed, whatever form the key file used: the fingerprint must not
// depend on how the key was stored.
Result<std::string> public_pem(EVP_PKEY* pkey, const std::string& source) {
  unsigned char* der = nullptr;
  int der_size = i2d_PUBKEY(pkey, &der);
  if (der_size <= 0) return invalid(source + ": cannot encode the public key: " + openssl_reason());
  const unsigned char* cursor = der;
  EVP_PKEY* copy = d2i_PUBKEY(nullptr, &cursor, der_size);
  OPENSSL_free(der);
  if (!copy) return invalid(source + ": cannot encode the public key: " + openssl_reason());
  EcKeyHandle owner{copy};
  EVP_PKEY_set_utf8_string_param(copy, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed");
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio || PEM_write_bio_PUBKEY(bio, copy) != 1) {
    BIO_free(bio);
    return invalid(source + ": cannot encode the public key: " + openssl_reason());
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

bool looks_private(std::string_view text) { return text.find("PRIVATE KEY-----") != std::string_view::npos; }
bool looks_encrypted(std::string_view text) {
  return text.find("ENCRYPTED PRIVATE KEY-----") != std::string_view::npos || text.find("Proc-Type: 4,ENCRYPTED") != std::string_view::npos;
}

// OpenSSL's password callback: the given password, or none (never a prompt).
int password_callback(char* buffer, int size, int, void* user) {
  const auto* password = static_cast<const std::optional<std::string>*>(user);
  if (!password || !password->has_value() || size <= 0) return 0;
  const size_t n = std::min((*password)->size(), static_cast<size_t>(size));
  std::copy_n((*password)->data(), n, buffer);
  return static_cast<int>(n);
}

}  // namespace

Result<PublicKey> PublicKey::make(std::shared_ptr<EcKeyHandle> key, const std::string& source) {
  PTB_TRY(const Curve* curve, check_curve(key->pkey, source));
  PublicKey out;
  PTB_TRY(out.pem_, public_pem(key->pkey, source));
  const std::string& pem = out.pem_;
  out.fingerprint_ = to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(pem.data()), pem.size())));
  out.key_ = std::move(key);
  out.source_ = source;
  out.curve_ = curve->name;
  out.hash_ = curve->hash;
  return out;
}

Result<PublicKey> PublicKey::from_bytes(Bytes data, const std::string& source) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  if (looks_private(text))
    return invalid(source + ": is a private key; give the public key (openssl pkey -in KEY -pubout -out PUB.pem)");
  ERR_clear_error();
  EVP_PKEY* pkey = nullptr;
  if (text.find("-----BEGIN") != std::string_view::npos) {
    BIO* bio = BIO_new_mem_buf(data.data(), static_cast<int>(data.size()));
    if (bio) pkey = PEM_read_bio_PUBKEY(bio, nullptr, password_callback, nullptr);
    BIO_free(bio);
  } else {
    const unsigned char* cursor = data.data();
    pkey = d2i_PUBKEY(nullptr, &cursor, static_cast<long>(data.size()));
  }
  if (!pkey) {
    return invalid(source + ": not a public key (" + openssl_reason() +
                   "); expected PEM \"-----BEGIN PUBLIC KEY-----\" or DER SubjectPublicKeyInfo");
  }
  auto key = std::make_shared<EcKeyHandle>();
  key->pkey = pkey;
  return make(std::move(key), source);
}

Result<PublicKey> PublicKey::load(const std::string& path) {
  PTB_TRY(std::string text, read_small_file(path, "a public key"));
  return from_bytes(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()), path);
}

bool PublicKey::verifies(Bytes message, Bytes signature) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, digest_of(hash_), nullptr, key_->pkey) == 1 &&
            EVP_DigestVerify(ctx, signature.data(), signature.size(), message.data(), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  // A malformed DER signature leaves errors queued; they must not leak into a later message.
  ERR_clear_error();
  return ok;
}

Result<SigningKey> SigningKey::load(const std::string& path, const std::optional<std::string>& password) {
  PTB_TRY(std::string text, read_small_file(path, "a private key"));
  if (text.find("-----BEGIN") == std::string::npos || !looks_private(text))
    return invalid(path + ": not a PEM private key; expected \"-----BEGIN PRIVATE KEY-----\" or \"-----BEGIN EC PRIVATE KEY-----\"");
  const bool encrypted = looks_encrypted(text);
  if (encrypted && !password) return usage_error(path + ": the private key is encrypted; give its password with --password-file");
  ERR_clear_error();
  BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
  EVP_PKEY* pkey = bio ? PEM_read_bio_PrivateKey(bio, nullptr, password_callback, const_cast<std::optional<std::string>*>(&password)) : nullptr;
  BIO_free(bio);
  if (!pkey) {
    if (encrypted) {
      ERR_clear_error();
      return invalid(path + ": cannot decrypt the private key: wrong password (from --password-file)");
    }
    return invalid(path + ": cannot read the private key: " + openssl_reason());
  }
  SigningKey out;
  out.key_ = std::make_shared<EcKeyHandle>();
  out.key_->pkey = pkey;
  PTB_TRY(out.public_, PublicKey::make(out.key_, path));
  return out;
}

Result<std::vector<uint8_t>> SigningKey::sign(Bytes message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t size = 0;
  std::vector<uint8_t> signature;
  bool ok = ctx && EVP_DigestSignInit(ctx, nullptr, digest_of(public_.hash()), nullptr, key_->pkey) == 1 &&
            EVP_DigestSign(ctx, nullptr, &size, message.data(), message.size()) == 1;
  if (ok) {
    signature.resize(size);
    ok = EVP_DigestSign(ctx, signature.data(), &size, message.data(), message.size()) == 1;
    signature.resize(size);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) return invalid(public_.source() + ": OpenSSL could not sign: " + openssl_reason());
  return signature;
}

Result<std::string> read_password_file(const std::string& path) {
  PTB_TRY(std::string text, read_small_file(path, "a password"));
  const size_t end = text.find_first_of("\r\n");
  if (end != std::string::npos) text.resize(end);
  return text;
}

Result<std::vector<PublicKey>> load_public_keys_dir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string extension = it->path().extension().string();
    std::error_code file_ec;
    if ((extension == ".pem" || extension == ".pub") && it->is_regular_file(file_ec)) paths.push_back(it->path().string());
  }
  if (ec) return io_error(dir + ": cannot list the folder: " + ec.message());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) return usage_error(dir + ": no *.pem or *.pub files; expected the public keys to verify with");
  std::vector<PublicKey> keys;
  for (const std::string& path : paths) {
    PTB_TRY(auto key, PublicKey::load(path));
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace ptb
