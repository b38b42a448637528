// The check list, and the small lookups every integrity check shares.
#include <limits>

#include "integrity/integrity_internal.h"

namespace ptb {

const char* check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::Fail: return "fail";
    case CheckStatus::Skip: return "skip";
    case CheckStatus::Pass: return "pass";
    case CheckStatus::Warn: return "warn";
  }
  return "pass";
}

void CheckList::add(std::string check, std::string subject, CheckStatus status, std::string message) {
  // The last guard on text from files reaching a message unbounded.
  constexpr size_t kLimit = 4096;
  if (message.size() > kLimit) message = clipped(message, kLimit);
  if (subject.size() > kLimit) subject = clipped(subject, kLimit);
  outcomes_.push_back({path_, std::move(check), std::move(subject), status, std::move(message)});
}
void CheckList::pass(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Pass, std::move(message));
}
void CheckList::fail(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Fail, std::move(message));
}
void CheckList::skip(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Skip, std::move(message));
}

void CheckList::warn(std::string check, std::string subject, std::string message) {
  add(std::move(check), std::move(subject), CheckStatus::Warn, std::move(message));
}

size_t CheckList::count(CheckStatus status) const {
  size_t n = 0;
  for (const auto& outcome : outcomes_) n += outcome.status == status;
  return n;
}

// As ExecuTorch's CudaWeightCache reaches a weight before binding it: the
// last element's offset plus one, in elements, then in bytes.
Result<uint64_t> weight_view_bytes(const CudaWeight& weight) {
  auto item = weight.dtype >= 0 && weight.dtype <= std::numeric_limits<int8_t>::max()
                  ? scalar_type_size(static_cast<int8_t>(weight.dtype))
                  : std::nullopt;
  if (!item) {
    return invalid("dtype " + std::to_string(weight.dtype) + " has no element size; expected an ExecuTorch ScalarType");
  }
  if (weight.sizes.size() != weight.strides.size()) {
    return invalid(std::to_string(weight.sizes.size()) + " sizes but " + std::to_string(weight.strides.size()) +
                   " strides; expected one stride per size");
  }
  if (weight.storage_offset < 0) {
    return invalid("storage_offset " + std::to_string(weight.storage_offset) + " is negative; expected >= 0");
  }
  uint64_t last = static_cast<uint64_t>(weight.storage_offset);
  for (size_t dim = 0; dim < weight.sizes.size(); ++dim) {
    if (weight.sizes[dim] < 0 || weight.strides[dim] < 0) {
      return invalid("dimension " + std::to_string(dim) + " has size " + std::to_string(weight.sizes[dim]) +
                     " and stride " + std::to_string(weight.strides[dim]) + "; expected both >= 0");
    }
    if (weight.sizes[dim] == 0) return uint64_t{0};  // an empty view reaches no byte
    uint64_t span = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(weight.sizes[dim] - 1), static_cast<uint64_t>(weight.strides[dim]),
                               &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return invalid("sizes and strides overflow 64 bits");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_add_overflow(last, 1, &bytes) || __builtin_mul_overflow(bytes, *item, &bytes)) {
    return invalid("sizes and strides overflow 64 bits");
  }
  return bytes;
}

namespace detail {

void pass_program(const std::string& subject, const PteFile& pte, CheckList& checks) {
  checks.pass(checks::kProgram, subject,
              std::to_string(pte.segments().size()) + " segment(s) and " + std::to_string(pte.named_data().size()) +
                  " named-data entr" + (pte.named_data().size() == 1 ? "y" : "ies") + ", all inside the file");
}

}  // namespace detail

}  // namespace ptb
