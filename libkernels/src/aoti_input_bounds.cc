// Dynamic dimension bounds from AOTInductor's input-check messages
// (aoti_input_bounds.h).
#include "ptbundle/kernels/aoti_input_bounds.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace ptb {
namespace {

constexpr std::string_view kHandles = "input_handles[";
constexpr std::string_view kTooSmall = "]: dim value is too small at ";
constexpr std::string_view kTooLarge = "]: dim value is too large at ";
constexpr std::string_view kAtLeast = "expected it to be >= ";
// PyTorch 2.11 writes the upper check without "it"; both are read in case a
// later release makes them alike.
constexpr std::string_view kAtMostNoIt = "expected to be <= ";
constexpr std::string_view kAtMostIt = "expected it to be <= ";
// In the wrapper source the bound's literal follows its check's within a
// line or two; in a library nothing is that close but the next check.
constexpr size_t kAdjacent = 96;
constexpr size_t kMaxDigits = 18;  // below 2^63: no overflow to handle
constexpr size_t kMaxProblems = 16;

std::string hex(size_t offset) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[offset & 15]);
    offset >>= 4;
  } while (offset);
  return "0x" + out;
}

// Decimal digits at `at` (at most kMaxDigits, at least one); the number
// and where it ends.
std::optional<std::pair<int64_t, size_t>> number_at(std::string_view text, size_t at) {
  size_t end = at;
  int64_t value = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
    if (end - at == kMaxDigits) return std::nullopt;
    value = value * 10 + (text[end] - '0');
    ++end;
  }
  if (end == at) return std::nullopt;
  return std::pair{value, end};
}

struct Check {
  uint32_t input = 0;
  uint32_t dim = 0;
  bool upper = false;
  size_t end = 0;  // just past the literal
  bool paired = false;
};

struct Bound {
  int64_t value = 0;
  bool upper = false;
  size_t offset = 0;
  bool used = false;
};

class Scan {
 public:
  explicit Scan(std::string_view text) : text_(text) {}

  AotiInputBounds run() {
    find_checks();
    find_bounds(kAtLeast, false);
    find_bounds(kAtMostNoIt, true);
    find_bounds(kAtMostIt, true);
    std::sort(bounds_.begin(), bounds_.end(), [](const Bound& a, const Bound& b) { return a.offset < b.offset; });
    pair_adjacent();
    pair_unique(false);
    pair_unique(true);
    for (auto& [key, dim] : dims_) out_.dims.push_back(dim);
    return std::move(out_);
  }

 private:
  void problem(std::string text) {
    if (out_.problems.size() < kMaxProblems) out_.problems.push_back(std::move(text));
  }

  // "input_handles[<input>]: dim value is too small at <dim>, "
  void find_checks() {
    for (size_t at = text_.find(kHandles); at != std::string_view::npos; at = text_.find(kHandles, at + 1)) {
      auto input = number_at(text_, at + kHandles.size());
      if (!input) continue;
      std::string_view rest = text_.substr(input->second);
      bool upper = rest.starts_with(kTooLarge);
      if (!upper && !rest.starts_with(kTooSmall)) continue;
      size_t dim_at = input->second + kTooSmall.size();  // both phrases are as long
      auto dim = number_at(text_, dim_at);
      if (!dim || text_.substr(dim->second, 2) != ", ") continue;
      if (input->first > UINT32_MAX || dim->first > UINT32_MAX) {
        problem("offset " + hex(at) + ": a check of input " + std::to_string(input->first) + " dim " +
                std::to_string(dim->first) + " names no dimension a tensor has; ignored");
        continue;
      }
      auto key = std::pair{static_cast<uint32_t>(input->first), static_cast<uint32_t>(dim->first)};
      if ((!dims_.count(key) && dims_.size() >= kMaxAotiDynamicDims) || checks_.size() >= 2 * kMaxAotiDynamicDims) {
        problem("offset " + hex(at) + ": more than " + std::to_string(kMaxAotiDynamicDims) +
                " dynamic dimensions; the rest are ignored");
        return;
      }
      dims_[key].input = key.first;
      dims_[key].dim = key.second;
      checks_.push_back({key.first, key.second, upper, dim->second + 2});
    }
  }

  void find_bounds(std::string_view phrase, bool upper) {
    for (size_t at = text_.find(phrase); at != std::string_view::npos; at = text_.find(phrase, at + 1)) {
      auto value = number_at(text_, at + phrase.size());
      if (!value || text_.substr(value->second, 2) != ", ") {
        problem("offset " + hex(at) + ": \"" + std::string(phrase) + "\" is not followed by a number and \", \"; ignored");
        continue;
      }
      if (bounds_.size() >= 2 * kMaxAotiDynamicDims) {
        problem("offset " + hex(at) + ": more than " + std::to_string(2 * kMaxAotiDynamicDims) +
                " bounds; the rest are ignored");
        return;
      }
      bounds_.push_back({value->first, upper, at, false});
    }
  }

  void set(const Check& check, int64_t value) {
    AotiDynamicDim& dim = dims_[{check.input, check.dim}];
    (check.upper ? dim.max : dim.min) = value;
  }

  // The wrapper source: the bound's literal right after its check's.
  void pair_adjacent() {
    for (Check& check : checks_) {
      auto next = std::lower_bound(bounds_.begin(), bounds_.end(), check.end,
                                   [](const Bound& b, size_t offset) { return b.offset < offset; });
      if (next == bounds_.end() || next->used || next->upper != check.upper) continue;
      if (next->offset - check.end > kAdjacent) continue;
      std::string_view between = text_.substr(check.end, next->offset - check.end);
      if (between.find('\0') != std::string_view::npos || between.find(kHandles) != std::string_view::npos) continue;
      next->used = true;
      set(check, next->value);
      check.paired = true;
    }
  }

  // The library: every check left takes the one distinct bound left, if
  // there is exactly one.
  void pair_unique(bool upper) {
    std::set<int64_t> values;
    for (const Bound& b : bounds_) {
      if (!b.used && b.upper == upper) values.insert(b.value);
    }
    size_t waiting = 0;
    for (const Check& c : checks_) waiting += !c.paired && c.upper == upper;
    if (waiting == 0) return;
    if (values.size() != 1) {
      problem(std::to_string(waiting) + (upper ? " upper" : " lower") + " bound checks and " +
              std::to_string(values.size()) + " distinct bounds that cannot be told apart; those bounds are unknown");
      return;
    }
    for (const Check& c : checks_) {
      if (!c.paired && c.upper == upper) set(c, *values.begin());
    }
  }

  std::string_view text_;
  std::map<std::pair<uint32_t, uint32_t>, AotiDynamicDim> dims_;
  std::vector<Check> checks_;
  std::vector<Bound> bounds_;
  AotiInputBounds out_;
};

}  // namespace

const AotiDynamicDim* AotiInputBounds::find(uint32_t input, uint32_t dim) const {
  for (const AotiDynamicDim& d : dims) {
    if (d.input == input && d.dim == dim) return &d;
  }
  return nullptr;
}

AotiInputBounds read_aoti_input_bounds(Bytes bytes) {
  return Scan(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())).run();
}

AotiInputBounds tightest_bounds(const AotiInputBounds& a, const AotiInputBounds& b) {
  std::map<std::pair<uint32_t, uint32_t>, AotiDynamicDim> dims;
  for (const AotiInputBounds* bounds : {&a, &b}) {
    for (const AotiDynamicDim& dim : bounds->dims) {
      auto [it, added] = dims.try_emplace({dim.input, dim.dim}, dim);
      if (added) continue;
      AotiDynamicDim& known = it->second;
      if (dim.min) known.min = known.min ? std::max(*known.min, *dim.min) : *dim.min;
      if (dim.max) known.max = known.max ? std::min(*known.max, *dim.max) : *dim.max;
    }
  }
  AotiInputBounds out;
  for (auto& [key, dim] : dims) out.dims.push_back(dim);
  for (const AotiInputBounds* bounds : {&a, &b}) {
    for (const std::string& problem : bounds->problems) {
      if (out.problems.size() < kMaxProblems) out.problems.push_back(problem);
    }
  }
  return out;
}

std::string bounds_text(const AotiDynamicDim& dim) {
  return (dim.min ? std::to_string(*dim.min) : "?") + ".." + (dim.max ? std::to_string(*dim.max) : "?");
}

std::optional<std::string> bounds_violation(const AotiInputBounds& bounds, uint32_t input,
                                            const std::vector<uint64_t>& shape) {
  for (const AotiDynamicDim& d : bounds.dims) {
    if (d.input != input || d.dim >= shape.size()) continue;
    const uint64_t size = shape[d.dim];
    const bool small = d.min && size < static_cast<uint64_t>(*d.min);
    const bool large = d.max && size > static_cast<uint64_t>(*d.max);
    if (!small && !large) continue;
    std::string text = "input " + std::to_string(input) + " dim " + std::to_string(d.dim) + " is " +
                       std::to_string(size) + "; this program takes " + bounds_text(d) + " there";
    if (small && size < 2 && *d.min == 2) {
      text += " (Inductor specializes sizes 0 and 1: export a batch of at least 2, or pad)";
    } else if (small) {
      text += " (pad it, or export with a smaller minimum)";
    } else {
      text += " (split it, or export with a larger maximum)";
    }
    return text;
  }
  return std::nullopt;
}

}  // namespace ptb
