// Opening a .pte: header, verification, and every index checked once so that
// later code can walk the program without bounds checks of its own.
#include <algorithm>

#include "formats/program_check.h"
#include "ptbundle/formats/pte.h"
#include "formats/duplicate_key.h"
#include "formats/wire.h"

namespace ptb {
namespace {

constexpr std::string_view kProgramIdentifier = "ET12";
constexpr std::string_view kExtendedHeaderMagic = "eh00";
constexpr uint64_t kExtendedHeaderOffset = 8;
// magic, length, program_size, segment_base_offset
constexpr uint32_t kExtendedHeaderMinimumLength = 24;
// ... and segment_data_size
constexpr uint32_t kExtendedHeaderFullLength = 32;


Result<std::optional<PteExtendedHeader>> read_extended_header(Bytes data, const std::string& name) {
  if (!detail::has_text_at(data, kExtendedHeaderOffset, kExtendedHeaderMagic)) return std::optional<PteExtendedHeader>();
  if (data.size() < kExtendedHeaderOffset + kExtendedHeaderMinimumLength) {
    return invalid(name + ": extended header at offset 8 is cut off: the file ends at byte " + std::to_string(data.size()) +
                   "; expected at least " + std::to_string(kExtendedHeaderOffset + kExtendedHeaderMinimumLength) + " bytes");
  }
  PteExtendedHeader header;
  header.length = detail::u32le(data, kExtendedHeaderOffset + 4);
  header.program_size = detail::u64le(data, kExtendedHeaderOffset + 8);
  header.segment_base_offset = detail::u64le(data, kExtendedHeaderOffset + 16);
  if (header.length < kExtendedHeaderMinimumLength) {
    return invalid(name + ": extended header length " + std::to_string(header.length) + " at offset 12 is too small; expected at least " +
                   std::to_string(kExtendedHeaderMinimumLength));
  }
  if (header.length >= kExtendedHeaderFullLength) {
    if (data.size() < kExtendedHeaderOffset + kExtendedHeaderFullLength) {
      return invalid(name + ": extended header at offset 8 is cut off: the file ends at byte " + std::to_string(data.size()) +
                     "; expected at least " + std::to_string(kExtendedHeaderOffset + kExtendedHeaderFullLength) + " bytes");
    }
    header.segment_data_size = detail::u64le(data, kExtendedHeaderOffset + 24);
  }
  if (header.program_size < kExtendedHeaderOffset + header.length || header.program_size > data.size()) {
    return invalid(name + ": extended header program_size " + std::to_string(header.program_size) +
                   " does not fit the file; expected between " + std::to_string(kExtendedHeaderOffset + header.length) + " and " +
                   std::to_string(data.size()) + " (the file size)");
  }
  if (header.segment_base_offset != 0 &&
      (header.segment_base_offset < header.program_size || header.segment_base_offset > data.size())) {
    return invalid(name + ": extended header segment_base_offset " + std::to_string(header.segment_base_offset) +
                   " lies outside the file after the program; expected between " + std::to_string(header.program_size) + " and " +
                   std::to_string(data.size()));
  }
  if (!range_fits(header.segment_base_offset, header.segment_data_size, data.size())) {
    return invalid(name + ": extended header says " + std::to_string(header.segment_data_size) + " bytes of segments start at offset " +
                   std::to_string(header.segment_base_offset) + ", past the end of the file (" + std::to_string(data.size()) + " bytes)");
  }
  return std::optional<PteExtendedHeader>(header);
}

}  // namespace

Result<PteFile> PteFile::open(const std::string& path) {
  PTB_TRY(auto mapped, MappedFile::open(path));
  auto owner = std::make_shared<const MappedFile>(std::move(mapped));
  Bytes data = owner->bytes();
  return parse(std::move(owner), data, path);
}

Result<PteFile> PteFile::open_in(const BundleDir& dir, const std::string& relative) {
  PTB_TRY(auto mapped, MappedFile::open_in(dir, relative));
  auto owner = std::make_shared<const MappedFile>(std::move(mapped));
  Bytes data = owner->bytes();
  std::string name = owner->path();
  return parse(std::move(owner), data, std::move(name));
}

Result<PteFile> PteFile::parse(std::shared_ptr<const MappedFile> owner, Bytes data, std::string name) {
  PteFile pte;
  Bytes whole = owner->bytes();
  if (data.data() != nullptr && (data.data() < whole.data() || data.data() + data.size() > whole.data() + whole.size())) {
    return invalid(name + ": program bytes do not lie inside " + owner->path());
  }
  pte.base_offset_ = data.empty() ? 0 : static_cast<uint64_t>(data.data() - whole.data());
  pte.owner_ = std::move(owner);
  pte.name_ = std::move(name);
  pte.data_ = data;
  const std::string& where = pte.name_;

  if (data.size() < 8) {
    return invalid(where + ": " + std::to_string(data.size()) +
                   " bytes is too short for a program; expected at least 8 (root offset and file identifier 'ET12')");
  }
  if (!detail::has_text_at(data, 4, kProgramIdentifier)) {
    return invalid(where + ": file identifier at offset 4 is '" + detail::show_bytes(data.subspan(4, 4)) +
                   "'; expected 'ET12' (an ExecuTorch program)");
  }
  PTB_TRY(pte.header_, read_extended_header(data, where));
  pte.flatbuffer_size_ = pte.header_ ? pte.header_->program_size : data.size();
  if (!detail::verifiable_size(pte.flatbuffer_size_)) {
    return invalid(where + ": program flatbuffer of " + std::to_string(pte.flatbuffer_size_) +
                   " bytes is too large; expected less than 2 GiB");
  }
  // Verified and read from a copy no other process can change (pte.h says why).
  auto copy = std::make_shared<std::vector<uint8_t>>(data.begin(), data.begin() + static_cast<ptrdiff_t>(pte.flatbuffer_size_));
  pte.flatbuffer_ = copy;
  flatbuffers::Verifier verifier(copy->data(), copy->size(), detail::verifier_options(copy->size()));
  if (!fb::VerifyProgramBuffer(verifier)) {
    return invalid(where + ": program flatbuffer (" + std::to_string(pte.flatbuffer_size_) +
                   " bytes from offset 0) fails FlatBuffers verification; expected a valid ExecuTorch Program");
  }
  pte.program_ = fb::GetProgram(copy->data());

  PTB_TRY(pte.segments_, detail::check_segments(*pte.program_, pte.header_, data.size(), where));
  PTB_TRY(pte.named_data_, detail::check_named_data(*pte.program_, pte.segments_, where));
  pte.named_data_index_.build(pte.named_data_);
  if (auto twice = detail::first_duplicate_key(pte.named_data_)) {
    return invalid(where + ": named data key '" + detail::show_text(pte.named_data_[twice->first].key) +
                   "' appears twice (entries " + std::to_string(twice->first) + " and " + std::to_string(twice->second) +
                   "); expected each key once, as a loader and a check could otherwise take different bytes");
  }
  PTB_CHECK(detail::check_constants(*pte.program_, pte.segments_, where));
  PTB_TRY(auto payload_refs, detail::check_plans(*pte.program_, pte.segments_, where));
  pte.delegate_payloads_.resize(payload_refs.size());
  for (size_t plan = 0; plan < payload_refs.size(); ++plan) {
    for (const auto& ref : payload_refs[plan]) {
      if (ref.in_segment) {
        const PteSegment& segment = pte.segments_[ref.index];
        pte.delegate_payloads_[plan].push_back(data.subspan(segment.file_offset, segment.size));
      } else {
        const auto* inline_data = pte.program_->backend_delegate_data()->Get(ref.index)->data();
        pte.delegate_payloads_[plan].push_back(inline_data ? Bytes(inline_data->data(), inline_data->size()) : Bytes());
      }
    }
  }
  return pte;
}

Bytes PteFile::segment_bytes(size_t index) const {
  const PteSegment& segment = segments_.at(index);
  return data_.subspan(segment.file_offset, segment.size);
}

const PteNamedData* PteFile::find_named_data(std::string_view key) const {
  return named_data_index_.find(named_data_, key);
}

Bytes PteFile::named_data_bytes(const PteNamedData& entry) const { return segment_bytes(entry.segment_index); }

Bytes PteFile::delegate_payload(size_t plan_index, size_t delegate_index) const {
  return delegate_payloads_.at(plan_index).at(delegate_index);
}

}  // namespace ptb
