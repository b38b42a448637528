// What AOTInductor's generated wrapper source (<hash>.wrapper.cpp, kept in
// the package beside the library) says of the model where the package holds
// no other record: the counts its constructor passes to AOTInductorModelBase
// and how run_impl allocates what it returns. The text is generated, so the
// patterns are exact; anything else is "not known", never a guess.
#include <cctype>
#include <charconv>

#include "ptbundle/base/dtype.h"
#include "ptbundle/formats/pt2.h"

namespace ptb {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

// Reads an integer (an optional trailing 'L') at the start of `text`,
// skipping blanks; advances `text` past it.
std::optional<int64_t> take_integer(std::string_view& text) {
  size_t start = text.find_first_not_of(kSpace);
  if (start == std::string_view::npos) return std::nullopt;
  text = text.substr(start);
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc()) return std::nullopt;
  text = text.substr(static_cast<size_t>(end - text.data()));
  if (!text.empty() && text.front() == 'L') text = text.substr(1);
  return value;
}

bool take(std::string_view& text, char c) {
  size_t start = text.find_first_not_of(kSpace);
  if (start == std::string_view::npos || text[start] != c) return false;
  text = text.substr(start + 1);
  return true;
}

std::string_view identifier_at(std::string_view text) {
  size_t end = 0;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  return text.substr(0, end);
}

// "static constexpr int64_t <name>[] = {4L, 16L};" -> {4, 16}; nullopt for
// a symbolic size ("s77") or anything else.
std::optional<std::vector<int64_t>> int_array(std::string_view source, std::string_view name) {
  const std::string pattern = "int64_t " + std::string(name) + "[] = {";
  size_t at = source.find(pattern);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = source.substr(at + pattern.size());
  std::vector<int64_t> values;
  if (take(rest, '}')) return values;
  while (true) {
    auto value = take_integer(rest);
    if (!value || values.size() >= 64) return std::nullopt;
    values.push_back(*value);
    if (take(rest, '}')) return values;
    if (!take(rest, ',')) return std::nullopt;
    if (take(rest, '}')) return values;  // a trailing comma
  }
}

// The buffer an output handle comes from, through "auto bufN = std::move(bufM);  // reuse".
std::optional<Pt2OutputSignature> output_signature(std::string_view source, size_t index) {
  const std::string pattern = "output_handles[" + std::to_string(index) + "] = ";
  size_t at = source.find(pattern);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = source.substr(at + pattern.size());
  std::string name(identifier_at(rest));
  if (name.empty() || !rest.substr(name.size()).starts_with(".release();")) return std::nullopt;
  for (int hops = 0; hops < 10000; ++hops) {
    const std::string alias = "auto " + name + " = std::move(";
    size_t moved = source.find(alias);
    if (moved == std::string_view::npos) break;
    std::string_view from = source.substr(moved + alias.size());
    std::string next(identifier_at(from));
    if (next.empty() || !from.substr(next.size()).starts_with(")")) return std::nullopt;
    name = next;
  }
  // "aoti_torch_empty_strided(<ndim>, <sizes>, <strides>, cached_torch_dtype_<dtype>, ..., &<name>_handle)"
  const std::string handle = "&" + name + "_handle)";
  size_t handle_at = source.find(handle);
  if (handle_at == std::string_view::npos) return std::nullopt;
  size_t line_start = source.rfind('\n', handle_at);
  std::string_view line = source.substr(line_start == std::string_view::npos ? 0 : line_start + 1,
                                        handle_at - (line_start == std::string_view::npos ? 0 : line_start + 1));
  constexpr std::string_view kEmpty = "aoti_torch_empty_strided(";
  size_t call = line.find(kEmpty);
  if (call == std::string_view::npos) return std::nullopt;
  std::string_view args = line.substr(call + kEmpty.size());
  auto ndim = take_integer(args);
  if (!ndim || !take(args, ',')) return std::nullopt;
  args = args.substr(args.find_first_not_of(kSpace) == std::string_view::npos ? args.size() : args.find_first_not_of(kSpace));
  std::string_view sizes_name = identifier_at(args);
  if (sizes_name.empty()) return std::nullopt;
  size_t dtype_at = args.find("cached_torch_dtype_");
  if (dtype_at == std::string_view::npos) return std::nullopt;
  std::string_view dtype_name = identifier_at(args.substr(dtype_at + 19));
  auto dtype = scalar_type_from_name(dtype_name);
  auto sizes = int_array(source, sizes_name);
  if (!dtype || !sizes || sizes->size() != static_cast<size_t>(*ndim)) return std::nullopt;
  return Pt2OutputSignature{*dtype, std::move(*sizes)};
}

// check_input_<index>'s body: from its definition to the next function.
std::optional<Pt2InputCheck> input_check(std::string_view source, size_t index) {
  const std::string pattern = "static void check_input_" + std::to_string(index) + "(";
  size_t at = source.find(pattern);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view body = source.substr(at + pattern.size());
  size_t end = body.find("static void ");
  if (end != std::string_view::npos) body = body.substr(0, end);
  Pt2InputCheck check;
  constexpr std::string_view kDtype = "_expected_dtype = aoti_torch_dtype_";
  if (size_t dtype = body.find(kDtype); dtype != std::string_view::npos)
    check.scalar_type = scalar_type_from_name(identifier_at(body.substr(dtype + kDtype.size())));
  // "input_handles[0]: unmatched dim value at 1, "  "expected: 32, "
  const std::string dim = "input_handles[" + std::to_string(index) + "]: unmatched dim value at ";
  for (size_t from = body.find(dim); from != std::string_view::npos && check.sizes.size() < 64;
       from = body.find(dim, from + 1)) {
    std::string_view rest = body.substr(from + dim.size());
    auto d = take_integer(rest);
    constexpr std::string_view kExpected = "expected: ";
    size_t expected = rest.find(kExpected);
    if (!d || *d < 0 || expected == std::string_view::npos || expected > 64) continue;
    rest = rest.substr(expected + kExpected.size());
    auto size = take_integer(rest);
    if (size) check.sizes.emplace_back(static_cast<uint32_t>(*d), *size);
  }
  return check;
}

}  // namespace

std::vector<std::optional<Pt2InputCheck>> pt2_wrapper_inputs(std::string_view source, uint64_t count) {
  std::vector<std::optional<Pt2InputCheck>> inputs;
  for (uint64_t i = 0; i < count && i < 4096; ++i) inputs.push_back(input_check(source, static_cast<size_t>(i)));
  return inputs;
}

std::optional<Pt2WrapperCounts> pt2_wrapper_counts(std::string_view source) {
  constexpr std::string_view kBase = "AOTInductorModelBase(";
  size_t at = source.find(kBase);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = source.substr(at + kBase.size());
  int64_t values[3] = {};
  for (int64_t& value : values) {
    auto number = take_integer(rest);
    if (!number || *number < 0 || !take(rest, ',')) return std::nullopt;
    value = *number;
  }
  return Pt2WrapperCounts{static_cast<uint64_t>(values[0]), static_cast<uint64_t>(values[1]),
                          static_cast<uint64_t>(values[2])};
}

std::vector<std::optional<Pt2OutputSignature>> pt2_wrapper_outputs(std::string_view source, uint64_t count) {
  std::vector<std::optional<Pt2OutputSignature>> outputs;
  for (uint64_t i = 0; i < count && i < 4096; ++i) outputs.push_back(output_signature(source, static_cast<size_t>(i)));
  return outputs;
}

Result<std::optional<std::string>> pt2_wrapper_source(const Pt2Package& package, const Pt2Model& model) {
  // A wrapper source is text of a few hundred kilobytes; a limit keeps a
  // crafted entry from costing more.
  constexpr uint64_t kMaxWrapperSourceBytes = 64ull << 20;
  for (const auto& name : model.cpp_sources) {
    if (!name.ends_with(".wrapper.cpp")) continue;
    PTB_TRY(auto bytes, package.read_entry(name, kMaxWrapperSourceBytes));
    return std::optional<std::string>(std::string(bytes.begin(), bytes.end()));
  }
  return std::optional<std::string>();
}

}  // namespace ptb
