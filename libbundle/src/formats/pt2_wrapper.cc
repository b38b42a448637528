// What AOTInductor's generated wrapper source (<hash>.wrapper.cpp, kept in
// the package beside the library) says of the model where the package holds
// no other record: the counts its constructor passes to AOTInductorModelBase
// and how run_impl allocates what it returns. The text is generated, so the
// patterns are exact; anything else is "not known", never a guess.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

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

// Where each name the output search follows first appears, found in one
// pass per pattern over the text: the search then costs a lookup per hop,
// not a pass over the whole source (a crafted source of 4,096 outputs and
// long chains of moves would otherwise cost hours).
class WrapperIndex {
 public:
  explicit WrapperIndex(std::string_view source) : source_(source) {
    // "output_handles[<i>] = <name>.release();"
    each("output_handles[", [&](size_t after) {
      std::string_view rest = source_.substr(after);
      uint64_t index = 0;
      auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
      if (error != std::errc() || static_cast<size_t>(end - rest.data()) != std::to_string(index).size()) return;
      rest = rest.substr(static_cast<size_t>(end - rest.data()));
      if (!rest.starts_with("] = ")) return;
      // The first assignment counts, followed or not ("" when not).
      std::string_view name = identifier_at(rest.substr(4));
      outputs_.try_emplace(index, rest.substr(4 + name.size()).starts_with(".release();") ? name : std::string_view());
    });
    // "auto <name> = std::move(<from>)"
    each("auto ", [&](size_t after) {
      std::string_view rest = source_.substr(after);
      std::string_view name = identifier_at(rest);
      if (name.empty() || !rest.substr(name.size()).starts_with(" = std::move(")) return;
      std::string_view from = rest.substr(name.size() + 13);
      std::string_view next = identifier_at(from);
      // An empty or unclosed source name stays recorded: the search stops there.
      moves_.try_emplace(name, !next.empty() && from.substr(next.size()).starts_with(")") ? next : std::string_view());
    });
    // "&<name>_handle)": the line up to it
    each("_handle)", [&](size_t after) {
      size_t suffix = after - 8;
      size_t start = suffix;
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(source_[start - 1])) || source_[start - 1] == '_')) --start;
      if (start == 0 || source_[start - 1] != '&' || start == suffix) return;
      handles_.try_emplace(source_.substr(start, suffix - start), start - 1);
    });
    // "int64_t <name>[] = {"
    each("int64_t ", [&](size_t after) {
      std::string_view name = identifier_at(source_.substr(after));
      if (!name.empty() && source_.substr(after + name.size()).starts_with("[] = {"))
        arrays_.try_emplace(name, after + name.size() + 6);
    });
  }

  std::optional<std::string_view> output(uint64_t index) const { return find(outputs_, index); }
  // nullopt: no move into `name`; "": a move this reader does not follow.
  std::optional<std::string_view> moved_from(std::string_view name) const { return find(moves_, name); }
  std::optional<size_t> handle(std::string_view name) const { return find(handles_, name); }
  std::optional<size_t> array(std::string_view name) const { return find(arrays_, name); }
  std::string_view source() const { return source_; }

 private:
  template <class F>
  void each(std::string_view pattern, F&& f) {
    for (size_t at = source_.find(pattern); at != std::string_view::npos; at = source_.find(pattern, at + 1))
      f(at + pattern.size());
  }
  template <class Map, class Key>
  static std::optional<typename Map::mapped_type> find(const Map& map, const Key& key) {
    auto it = map.find(key);
    if (it == map.end()) return std::nullopt;
    return it->second;
  }

  std::string_view source_;
  std::map<uint64_t, std::string_view> outputs_;
  std::map<std::string_view, std::string_view, std::less<>> moves_;
  std::map<std::string_view, size_t, std::less<>> handles_;
  std::map<std::string_view, size_t, std::less<>> arrays_;
};

// "static constexpr int64_t <name>[] = {4L, 16L};" -> {4, 16}; nullopt for
// a symbolic size ("s77") or anything else.
std::optional<std::vector<int64_t>> int_array(const WrapperIndex& index, std::string_view name) {
  auto at = index.array(name);
  if (!at) return std::nullopt;
  std::string_view rest = index.source().substr(*at);
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
std::optional<Pt2OutputSignature> output_signature(const WrapperIndex& index, uint64_t output) {
  auto name = index.output(output);
  if (!name || name->empty()) return std::nullopt;
  for (int hops = 0; hops < 10000; ++hops) {
    auto from = index.moved_from(*name);
    if (!from) break;
    if (from->empty()) return std::nullopt;
    name = *from;
  }
  // "aoti_torch_empty_strided(<ndim>, <sizes>, <strides>, cached_torch_dtype_<dtype>, ..., &<name>_handle)"
  auto handle_at = index.handle(*name);
  if (!handle_at) return std::nullopt;
  std::string_view source = index.source();
  size_t line_start = source.rfind('\n', *handle_at);
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  std::string_view line = source.substr(line_start, *handle_at - line_start);
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
  auto sizes = int_array(index, sizes_name);
  if (!dtype || !sizes || sizes->size() != static_cast<size_t>(*ndim)) return std::nullopt;
  return Pt2OutputSignature{*dtype, std::move(*sizes)};
}

}  // namespace

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
  const WrapperIndex index(source);
  std::vector<std::optional<Pt2OutputSignature>> outputs;
  for (uint64_t i = 0; i < count && i < 4096; ++i) outputs.push_back(output_signature(index, i));
  return outputs;
}

std::vector<Pt2InputCheck> pt2_wrapper_inputs(std::string_view source, uint64_t count) {
  std::vector<Pt2InputCheck> inputs(static_cast<size_t>(std::min<uint64_t>(count, 4096)));
  // "input_handles[<i>]: <what> at <d>, " names a dim of input i; after
  // "unmatched dim value", the next "expected: <n>, " is its one size.
  constexpr std::string_view kHandles = "input_handles[";
  for (size_t at = source.find(kHandles); at != std::string_view::npos; at = source.find(kHandles, at + 1)) {
    std::string_view rest = source.substr(at + kHandles.size());
    uint64_t input = 0;
    auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), input);
    if (error != std::errc() || input >= inputs.size()) continue;
    rest = rest.substr(static_cast<size_t>(end - rest.data()));
    if (!rest.starts_with("]: ")) continue;
    rest = rest.substr(3);
    size_t line_end = rest.find('"');
    std::string_view what = rest.substr(0, line_end);
    size_t at_dim = what.rfind(" at ");
    if (at_dim == std::string_view::npos) continue;
    std::string_view dim_text = what.substr(at_dim + 4);
    uint32_t dim = 0;
    auto parsed = std::from_chars(dim_text.data(), dim_text.data() + dim_text.size(), dim);
    if (parsed.ec != std::errc() || parsed.ptr == dim_text.data() || dim >= 64) continue;
    Pt2InputCheck& check = inputs[static_cast<size_t>(input)];
    check.rank = std::max(check.rank, dim + 1);
    if (!what.starts_with("unmatched dim value at ")) continue;
    std::string_view after = rest.substr(line_end == std::string_view::npos ? rest.size() : line_end);
    constexpr std::string_view kExpected = "expected: ";
    size_t expected = after.find(kExpected);
    if (expected == std::string_view::npos || expected > 96) continue;
    std::string_view number = after.substr(expected + kExpected.size());
    auto size = take_integer(number);
    if (size && take(number, ',')) check.sizes[dim] = *size;
  }
  // "ConstantHandle <arg> = ConstantHandle(input_handles[<i>]);" then
  // "<arg>_expected_dtype = aoti_torch_dtype_<name>();"
  constexpr std::string_view kHandle = "ConstantHandle(input_handles[";
  for (size_t at = source.find(kHandle); at != std::string_view::npos; at = source.find(kHandle, at + 1)) {
    size_t line_start = source.rfind('\n', at);
    std::string_view line = source.substr(line_start == std::string_view::npos ? 0 : line_start + 1);
    constexpr std::string_view kDeclared = "ConstantHandle ";
    size_t declared = line.find(kDeclared);
    if (declared == std::string_view::npos) continue;
    std::string_view name = identifier_at(line.substr(declared + kDeclared.size()));
    std::string_view rest = source.substr(at + kHandle.size());
    uint64_t input = 0;
    auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), input);
    if (name.empty() || error != std::errc() || input >= inputs.size()) continue;
    const std::string pattern = std::string(name) + "_expected_dtype = aoti_torch_dtype_";
    size_t dtype_at = source.find(pattern, at);
    if (dtype_at == std::string_view::npos || dtype_at - at > 1024) continue;
    inputs[static_cast<size_t>(input)].scalar_type = scalar_type_from_name(identifier_at(source.substr(dtype_at + pattern.size())));
  }
  return inputs;
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
