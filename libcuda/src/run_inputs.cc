// Binding, reading and making the inputs of a run (run_inputs.h).
#include "ptbundle/cuda/run_inputs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "ptbundle/formats/npy.h"

namespace ptb {
namespace {

}  // namespace

NamedFile split_named(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return {"", text};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

std::optional<size_t> as_index(const std::string& name) {
  if (name.empty() || name.size() > 6 || name.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoul(name);
}

}  // namespace

Result<size_t> resolve_named(const NamedFile& item, const std::vector<std::string>& names, size_t& next, const char* what,
                       const std::string& option) {
  size_t index = 0;
  if (item.name.empty()) {
    index = next++;
  } else if (auto number = as_index(item.name)) {
    index = *number;
  } else {
    auto found = std::find(names.begin(), names.end(), item.name);
    if (found == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return usage_error(option + " " + item.name + "=" + item.file + ": no " + what + " named '" + item.name +
                         "'; the library has " + (known.empty() ? "none" : known) + " (or use an index)");
    }
    index = static_cast<size_t>(found - names.begin());
  }
  if (index >= names.size()) {
    return usage_error(option + " " + (item.name.empty() ? item.file : item.name + "=" + item.file) + ": the part has " +
                       std::to_string(names.size()) + " " + what + "s");
  }
  return index;
}

Result<std::vector<BoundInput>> bind_inputs(const InputArguments& arguments, const RunPart& part,
                                            const std::vector<std::string>& names) {
  const size_t count = names.size();
  if (part.inputs && part.inputs->size() != count) {
    return invalid(part.source + ": method " + part.method + " takes " + std::to_string(part.inputs->size()) +
                   " inputs, but its library takes " + std::to_string(count));
  }
  std::vector<std::optional<BoundInput>> slots(count);
  size_t next = 0;
  for (const std::string& text : arguments.files) {
    NamedFile item = split_named(text);
    PTB_TRY(size_t index, resolve_named(item, names, next, "input", "--input"));
    if (slots[index]) return usage_error("--input: input " + std::to_string(index) + " is given twice");
    std::optional<ValueSpec> spec;
    if (part.inputs) spec = (*part.inputs)[index];
    PTB_TRY(HostTensor tensor, read_input(item.file, spec, index, part.method));
    slots[index] = BoundInput{std::move(tensor), item.file};
  }
  std::vector<BoundInput> inputs;
  for (size_t i = 0; i < count; ++i) {
    if (!slots[i]) {
      if (!arguments.random) {
        return usage_error("input " + std::to_string(i) + " (" + names[i] + ") of " + part.method +
                           " is not given: pass --input " + std::to_string(i) + "=FILE.npy, or --random");
      }
      if (!part.inputs) {
        return usage_error(part.source + " records no input signature, so --random cannot make input " +
                           std::to_string(i) + "; pass --input " + std::to_string(i) + "=FILE.npy");
      }
      PTB_TRY(HostTensor tensor, random_input((*part.inputs)[i], i, part.method, arguments.seed));
      slots[i] = BoundInput{std::move(tensor), "random"};
    }
    if (auto refused = bounds_violation(part.input_bounds, static_cast<uint32_t>(i), slots[i]->tensor.shape)) {
      return invalid(slots[i]->origin + ": " + *refused);
    }
    inputs.push_back(std::move(*slots[i]));
  }
  return inputs;
}

namespace {

std::vector<std::string> index_names(size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

}  // namespace

// EarlyInputs is a plain struct, not std::optional<std::vector>: GCC 12 -O2
// reports a false -Wmaybe-uninitialized for the latter once it is moved out
// of a Result.
Result<EarlyInputs> bind_before_loading(const InputArguments& arguments, const RunPart& part) {
  if (!part.inputs) return EarlyInputs{};
  auto inputs = bind_inputs(arguments, part, index_names(part.inputs->size()));
  if (inputs.ok()) return EarlyInputs{true, std::move(inputs).value()};
  for (const auto& text : arguments.files) {
    NamedFile item = split_named(text);
    if (!item.name.empty() && !as_index(item.name)) return EarlyInputs{};
  }
  return inputs.error();
}

std::string tensor_text(int8_t scalar_type, const std::vector<uint64_t>& shape) {
  return std::string(scalar_type_name(scalar_type)) + " " + shape_text(shape);
}

namespace {

std::vector<uint64_t> spec_shape(const TensorSpec& spec) {
  std::vector<uint64_t> shape;
  for (int64_t size : spec.sizes) shape.push_back(size < 0 ? 0 : static_cast<uint64_t>(size));
  return shape;
}

std::string input_text(size_t index, const std::string& method) {
  return "input " + std::to_string(index) + " of " + method;
}

Result<const TensorSpec*> tensor_spec(const ValueSpec& spec, size_t index, const std::string& method) {
  if (!spec.tensor) {
    return invalid(input_text(index, method) + " is a " + spec.kind + ", not a tensor; ptbundle run passes tensors only");
  }
  return &*spec.tensor;
}

}  // namespace

Result<HostTensor> read_input(const std::string& path, const std::optional<ValueSpec>& spec, size_t index,
                              const std::string& method) {
  PTB_TRY(NpyFile file, NpyFile::open(path));
  const NpyHeader& header = file.header();
  if (spec) {
    PTB_TRY(const TensorSpec* tensor, tensor_spec(*spec, index, method));
    const std::vector<uint64_t> expected = spec_shape(*tensor);
    bool shape_ok = header.shape.size() == expected.size();
    const bool bounded = tensor->dynamism != "static";
    for (size_t d = 0; shape_ok && d < expected.size(); ++d) {
      shape_ok = bounded ? header.shape[d] <= expected[d] : header.shape[d] == expected[d];
    }
    if (header.scalar_type != tensor->scalar_type || !shape_ok) {
      return invalid(path + ": holds " + tensor_text(header.scalar_type, header.shape) + "; " +
                     input_text(index, method) + " takes " + tensor_text(tensor->scalar_type, expected) +
                     (bounded ? " (each dimension at most)" : ""));
    }
  }
  HostTensor tensor;
  tensor.scalar_type = header.scalar_type;
  tensor.shape = header.shape;
  tensor.data.assign(file.data().begin(), file.data().end());
  return tensor;
}

Result<HostTensor> random_input(const ValueSpec& spec, size_t index, const std::string& method, uint64_t seed) {
  PTB_TRY(const TensorSpec* tensor, tensor_spec(spec, index, method));
  auto element = scalar_type_size(tensor->scalar_type);
  if (!element) {
    return invalid(input_text(index, method) + " has dtype " + scalar_type_name(tensor->scalar_type) +
                   ", for which ptbundle makes no random values; give an .npy file with --input");
  }
  HostTensor out;
  out.scalar_type = tensor->scalar_type;
  out.shape = spec_shape(*tensor);
  uint64_t count = 1;
  for (uint64_t d : out.shape) {
    if (d != 0 && count > (1ull << 40) / d) return invalid(input_text(index, method) + " is too large to fill");
    count *= d;
  }
  out.data.resize(count * *element);
  std::mt19937_64 engine(seed + index);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  uint8_t* p = out.data.data();
  for (uint64_t i = 0; i < count; ++i, p += *element) {
    switch (tensor->scalar_type) {
      case 5: {  // float16: round a float32 to the nearest half (values in [-1, 1) never overflow)
        float value = real(engine);
        uint32_t bits = std::bit_cast<uint32_t>(value);
        uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
        float magnitude = std::fabs(value);
        uint16_t half = sign;
        if (magnitude >= 6.103515625e-05f) {  // normal half
          int exponent;
          float mantissa = std::frexp(magnitude, &exponent);  // [0.5, 1)
          uint32_t m = static_cast<uint32_t>(std::lround((mantissa * 2 - 1) * 1024));
          int e = exponent - 1 + 15;
          if (m == 1024) { m = 0; ++e; }
          half |= static_cast<uint16_t>((e << 10) | m);
        } else {
          half |= static_cast<uint16_t>(std::lround(magnitude / 5.9604644775390625e-08f));
        }
        std::memcpy(p, &half, 2);
        break;
      }
      case 6: { float value = real(engine); std::memcpy(p, &value, 4); break; }
      case 7: { double value = real(engine); std::memcpy(p, &value, 8); break; }
      case 15: {  // bfloat16: the upper half of a float32, rounded to nearest even
        uint32_t bits = std::bit_cast<uint32_t>(real(engine));
        uint16_t bf = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
        std::memcpy(p, &bf, 2);
        break;
      }
      case 11: p[0] = static_cast<uint8_t>(small(engine) & 1); break;
      default: {  // integers, little-endian
        uint64_t value = static_cast<uint64_t>(small(engine));
        std::memcpy(p, &value, *element);
        break;
      }
    }
  }
  return out;
}

}  // namespace ptb
