// The inputs of a run, in one place: "NAME=FILE.npy" arguments bound to the
// library's inputs (by index or by the library's names), each .npy checked
// against the method's signature as it is read, and random values for
// inputs given none. run.h uses it for `ptbundle run`, the tests and the
// benchmarks for their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/formats/pte.h"

namespace ptb {

// "NAME=FILE" or "FILE" (NAME empty: the next one in order).
struct NamedFile {
  std::string name;
  std::string file;
};
NamedFile split_named(const std::string& text);

// NAME against indices and `names`; `next` counts the unnamed ones. `what`
// is "input" or "output", `option` the flag that gave it ("--input").
Result<size_t> resolve_named(const NamedFile& item, const std::vector<std::string>& names, size_t& next,
                             const char* what, const std::string& option);

struct InputArguments {
  std::vector<std::string> files;  // "NAME=FILE.npy" or "FILE.npy"
  bool random = false;             // random values for inputs not given
  uint64_t seed = 0;
};

struct BoundInput {
  HostTensor tensor;
  std::string origin;  // the file, or "random"
};

// Inputs in the library's order, named by `names`; each checked against
// the dynamic dim bounds the library holds (part.input_bounds), so that a
// size the library would refuse is refused here, with the bounds named.
Result<std::vector<BoundInput>> bind_inputs(const InputArguments& arguments, const RunPart& part,
                                            const std::vector<std::string>& names);

// Inputs bound before the library is loaded, against the signature, when
// every name is an index; `bound` false when a name waits for the
// library's names.
struct EarlyInputs {
  bool bound = false;
  std::vector<BoundInput> inputs;
};
Result<EarlyInputs> bind_before_loading(const InputArguments& arguments, const RunPart& part);

// "float32 [4, 16]"
std::string tensor_text(int8_t scalar_type, const std::vector<uint64_t>& shape);

// An .npy file checked against input `index` of the method: dtype, and shape
// (each dimension at most the bound for dynamic_bound tensors). The error
// names the file, the input and both signatures.
Result<HostTensor> read_input(const std::string& path, const std::optional<ValueSpec>& spec, size_t index,
                              const std::string& method);

// Values for input `index` from its signature: uniform in [-1, 1) for
// floating types, [0, 10) for integers, 0/1 for bool; the same seed gives
// the same values.
Result<HostTensor> random_input(const ValueSpec& spec, size_t index, const std::string& method, uint64_t seed);

}  // namespace ptb
