// ExecuTorch's own reading of the CUDA fixtures (cuda/*/dump.json), the
// ground truth the reader tests compare against field by field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/sha256.h"
#include "support.h"

namespace ptb::test {

// The folders under cuda/ that hold a dump.json, sorted.
std::vector<fs::path> cuda_fixture_dirs();

nlohmann::json read_json(const fs::path& path);

// The error text of a failed result, "" otherwise: for REQUIRE_MESSAGE.
template <class T>
std::string error_of(const Result<T>& result) {
  return result.ok() ? std::string() : result.error().message;
}

inline std::string sha256_hex(Bytes bytes) { return to_hex(sha256(bytes)); }

}  // namespace ptb::test
