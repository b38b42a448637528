// Reading ExecuTorch BundledPrograms (.bpte): a whole program plus, per
// method, test cases (inputs and expected outputs). open() verifies the
// outer flatbuffer, opens the inner program as a PteFile (with all of its
// checks) and checks that every test suite names a method of that program.
// Tensor bytes point into a private copy of the file, the one verified.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct BundledTensor {
  int8_t scalar_type = 0;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dim_order;
  Bytes data;  // numel x element size bytes, checked at open
};

// One input or expected output: a tensor, or an "int", "bool" or "double".
struct BundledValue {
  std::string kind;
  std::optional<BundledTensor> tensor;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
};

struct BundledTestCase {
  std::vector<BundledValue> inputs;
  std::vector<BundledValue> expected_outputs;
};

struct BundledTestSuite {
  std::string method_name;
  std::vector<BundledTestCase> test_cases;
};

class BpteFile {
 public:
  static Result<BpteFile> open(const std::string& path);
  // A file already mapped (by a caller that read its kind from the mapping).
  static Result<BpteFile> parse(MappedFile file);

  const std::string& path() const { return file_->path(); }
  const MappedFile& file() const { return *file_; }
  uint32_t version() const { return version_; }
  const PteFile& program() const { return program_; }
  const std::vector<BundledTestSuite>& test_suites() const { return suites_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  PteFile program_;
  std::vector<BundledTestSuite> suites_;
};

}  // namespace ptb
