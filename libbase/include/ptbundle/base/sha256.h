// SHA-256 through OpenSSL, streamed so that any size hashes in constant memory.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "ptbundle/base/file.h"

namespace ptb {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(Bytes data);
  Digest finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest sha256(Bytes data);
std::string to_hex(const Digest& digest);

// SHA-256 (hex) of [offset, offset + size) of `file`, streamed in 1 MiB
// slices through one buffer, so that hashing a 4 GiB blob keeps nothing of it
// resident. The range must lie in the file.
std::string sha256_mapped_range(const MappedFile& file, uint64_t offset, uint64_t size);

}  // namespace ptb
