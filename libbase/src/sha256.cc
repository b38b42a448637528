#include "ptbundle/base/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace ptb {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  // Allocation failure of a few hundred bytes is not a recoverable input error.
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::bad_alloc();
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(Bytes data) {
  // Feed large spans in slices so that pages of a mapping are touched in order.
  constexpr size_t kSlice = 1 << 20;
  for (size_t at = 0; at < data.size(); at += kSlice) {
    size_t n = std::min(kSlice, data.size() - at);
    EVP_DigestUpdate(state_->ctx, data.data() + at, n);
  }
}

Digest Sha256::finish() {
  Digest digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->ctx, digest.data(), &length);
  return digest;
}

Digest sha256(Bytes data) {
  Sha256 hasher;
  hasher.update(data);
  return hasher.finish();
}

std::string to_hex(const Digest& digest) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace ptb
