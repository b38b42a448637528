// The check list, and the small lookups every integrity check shares.
#include <algorithm>
#include <filesystem>
#include <limits>

#include "integrity/integrity_internal.h"
#include "ptbundle/bundle/names.h"

namespace ptb {

namespace fs = std::filesystem;

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

VerifyInput parse_verify_input(std::string_view argument) {
  // Only "<x>.pte,<y>" and "<x>.bpte,<y>" split, so that other paths with a
  // comma in them still name one file.
  const size_t comma = argument.find(',');
  if (comma != std::string_view::npos) {
    std::string_view program = argument.substr(0, comma);
    if (program.ends_with(".pte") || program.ends_with(".bpte")) {
      return {std::string(program), std::string(argument.substr(comma + 1))};
    }
  }
  return {std::string(argument), std::nullopt};
}

std::optional<NamedBytes> find_named_bytes(const PteFile& pte, const PtdFile* ptd, std::string_view key) {
  if (ptd) {
    if (const PtdEntry* entry = ptd->find(key)) return NamedBytes{ptd->bytes(*entry), ptd->path()};
  }
  if (const PteNamedData* entry = pte.find_named_data(key)) return NamedBytes{pte.named_data_bytes(*entry), pte.name()};
  return std::nullopt;
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

namespace integrity {

std::vector<std::string> data_file_candidates(const std::string& program_path, const PteFile& pte) {
  fs::path program(program_path);
  std::vector<std::string> candidates{fs::path(program).replace_extension(".ptd").string()};
  for (const std::string& name : data_names(pte)) {
    // A compile spec is untrusted: only a name that passes the rules may
    // become a path, and then only inside the program's folder.
    if (!check_part_name(name, "data_name").ok()) continue;
    std::string path = (program.parent_path() / (name + ".ptd")).string();
    if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) candidates.push_back(path);
  }
  std::string fallback = (program.parent_path() / "aoti_cuda_blob.ptd").string();
  if (std::find(candidates.begin(), candidates.end(), fallback) == candidates.end()) candidates.push_back(fallback);
  return candidates;
}

std::vector<std::string> data_names(const PteFile& pte) {
  std::vector<std::string> names;
  for (const MethodInfo& method : describe_methods(pte)) {
    for (const DelegateInfo& delegate : method.delegates) {
      const CompileSpecEntry* spec = delegate.find_spec("data_name");
      if (!spec) continue;
      std::string name(spec->value.begin(), spec->value.end());
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::string in_quotes(std::string_view text) { return "'" + clipped(text) + "'"; }

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace integrity

std::optional<std::string> find_data_file_beside(const std::string& program_path, const PteFile& pte) {
  for (const std::string& candidate : integrity::data_file_candidates(program_path, pte)) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

}  // namespace ptb
