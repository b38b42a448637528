// SHA-256 through OpenSSL, streamed so that any size hashes in constant memory.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/base/result.h"

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

// The one file hasher. SHA-256 (hex) of [offset, offset + size) of `file`,
// read with pread in 1 MiB slices through one buffer: hashing a 4 GiB blob
// keeps nothing of it resident, and costs less than faulting the mapping in.
// A range past the end, a failed read, or a file cut short while it is read
// is an error naming the file and the offset, never a digest of fewer bytes.
// `progress` (may be null) gets the bytes as they are hashed.
Result<std::string> sha256_file_range(const MappedFile& file, uint64_t offset, uint64_t size,
                                      ProgressCounter* progress = nullptr);
// The whole regular file at `path`, opened with no symlink followed.
Result<std::string> sha256_file(const std::string& path);

}  // namespace ptb
