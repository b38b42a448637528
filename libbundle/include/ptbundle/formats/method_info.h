// What a method of a program looks like from outside: its inputs, outputs,
// operators and delegates, for inspect, manifests and run. Plain structs,
// apart from pte.h so that code which only describes a method does not
// parse the FlatBuffers schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ptb {

struct TensorSpec {
  int8_t scalar_type = 0;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dim_order;
  std::string dynamism = "static";  // "static", "dynamic_bound", "dynamic_unbound"
};

// One input or output of a method: a tensor, or another kind of value
// ("int", "double", "bool", "string", "none", "int_list", ...).
struct ValueSpec {
  std::string kind;
  std::optional<TensorSpec> tensor;
};

struct CompileSpecEntry {
  std::string key;
  std::vector<uint8_t> value;
  bool is_text() const;  // printable UTF-8/ASCII
};

struct DelegateInfo {
  std::string id;                         // "CudaBackend", ...
  std::string location;                   // "inline" or "segment"
  uint32_t index = 0;                     // into backend_delegate_data or segments
  uint64_t payload_size = 0;
  std::vector<CompileSpecEntry> compile_specs;  // in file order
  const CompileSpecEntry* find_spec(std::string_view key) const;
};

struct MethodInfo {
  std::string name;
  std::vector<ValueSpec> inputs;
  std::vector<ValueSpec> outputs;
  std::vector<std::string> operators;  // "name.overload" or "name"
  std::vector<DelegateInfo> delegates;
  uint64_t num_values = 0;
  uint64_t num_instructions = 0;
  std::vector<int64_t> non_const_buffer_sizes;
};

}  // namespace ptb
