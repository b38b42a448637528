// A program with its data: an ExecuTorch program (a .pte, or the program
// inside a .bpte) and the data file its delegates read named data from,
// opened once, its methods described once and its CUDA delegates found and
// their payloads decoded once. export, merge, verify, inspect and run all
// work on this, so that they agree on which data file a program uses and
// where a key is looked up.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"

namespace ptb {

// The delegate id ExecuTorch's CUDA backend writes (backends/cuda/cuda_backend.py).
inline constexpr std::string_view kCudaBackendId = "CudaBackend";

// One CudaBackend delegate of a program.
struct CudaDelegate {
  size_t plan = 0;    // execution plan index
  size_t index = 0;   // within the plan's delegates
  std::string method;  // the execution plan's name (never the compile spec's)
  std::string where;   // "<program>: <method> delegate <index>", what messages name
  // The decoded payload, or why it does not decode (the message starts with `where`).
  std::optional<CudaPayload> payload;
  std::optional<Error> error;
  std::string identity() const { return method + "[" + std::to_string(index) + "]"; }
  Result<const CudaPayload*> decoded() const;
};

// Bytes stored under a named-data key, and the file that holds them.
struct NamedBytes {
  Bytes bytes;
  std::string file;
  bool in_data_file = false;  // the .ptd, not the program's own named data
};

// The named-data lookup of ExecuTorch's runtime: Method::init merges the
// external data map (the .ptd) and the program's own named data, in that
// order (runtime/executor/method.cpp, MergedDataMap::load(external, pte)),
// and the merged map answers from the first map that holds the key. (It also
// refuses a key held by both; ptbundle's verify reports keys, not that.)
std::optional<NamedBytes> find_named_bytes(const PteFile& pte, const PtdFile* ptd, std::string_view key);

// The distinct data_name compile-spec values of all delegates, in file order.
std::vector<std::string> data_names(const std::vector<MethodInfo>& methods);

// The files a lone program's data may be in, in the order they are tried:
// <stem>.ptd (a bundle part's own name), <data_name>.ptd for each data name
// of its delegates that passes the part-name rules (a compile spec is
// untrusted), then aoti_cuda_blob.ptd (ExecuTorch's CUDA export names its
// data file after this external tag); all beside the program.
std::vector<std::string> data_file_candidates(const std::string& program_path, const std::vector<MethodInfo>& methods);
// The first candidate that exists as a regular file.
std::optional<std::string> find_data_file_beside(const std::string& program_path, const std::vector<MethodInfo>& methods);

class ProgramWithData {
 public:
  // A program and its data as already opened (a bundle part's shared data
  // file, the program inside a .bpte). `name` is what messages call the
  // program; empty: pte->name().
  ProgramWithData(std::shared_ptr<const PteFile> pte, std::shared_ptr<const PtdFile> ptd, std::string name = "");

  // Opens `program`, then `data` when given, else the data file found
  // beside it (data_file_candidates), else none.
  static Result<ProgramWithData> open(const std::string& program, const std::optional<std::string>& data);

  // The data file, once it has been found (a lone program's is looked for
  // with the data names of its methods).
  void set_data(std::shared_ptr<const PtdFile> ptd) { ptd_ = std::move(ptd); }

  const PteFile& pte() const { return *pte_; }
  const std::shared_ptr<const PteFile>& pte_ptr() const { return pte_; }
  const PtdFile* ptd() const { return ptd_.get(); }
  const std::shared_ptr<const PtdFile>& ptd_ptr() const { return ptd_; }
  const std::string& name() const { return name_; }

  const std::vector<MethodInfo>& methods() const { return methods_; }
  const MethodInfo* find_method(std::string_view name) const;
  const std::vector<CudaDelegate>& cuda_delegates() const { return cuda_; }
  bool has_cuda() const { return !cuda_.empty(); }
  // The CUDA delegates of one execution plan.
  std::vector<const CudaDelegate*> cuda_delegates_of(size_t plan) const;

  std::optional<NamedBytes> find(std::string_view key) const { return find_named_bytes(*pte_, ptd_.get(), key); }

 private:
  std::shared_ptr<const PteFile> pte_;
  std::shared_ptr<const PtdFile> ptd_;
  std::string name_;
  std::vector<MethodInfo> methods_;
  std::vector<CudaDelegate> cuda_;
};

}  // namespace ptb
