// Opening a .ptd (FlatTensor). ExecuTorch splices a 40-byte "FH01" header,
// padded to the tensor alignment, in after the flatbuffer's root offset and
// file identifier; the flatbuffer then spans [0, flatbuffer_offset +
// flatbuffer_size) and the segments start at segment_base_offset.
#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/formats/ptd.h"
#include "formats/duplicate_key.h"
#include "formats/wire.h"

namespace ptb {
namespace {

constexpr std::string_view kDataIdentifier = "FT01";
constexpr std::string_view kHeaderMagic = "FH01";
constexpr uint64_t kHeaderOffset = 8;
constexpr uint32_t kHeaderLength = 40;


Result<PtdHeader> read_header(Bytes data, const std::string& path) {
  if (data.size() < 8) {
    return invalid(path + ": " + std::to_string(data.size()) +
                   " bytes is too short for a data file; expected at least 8 (root offset and file identifier 'FT01')");
  }
  if (!detail::has_text_at(data, 4, kDataIdentifier)) {
    return invalid(path + ": file identifier at offset 4 is '" + detail::show_bytes(data.subspan(4, 4)) +
                   "'; expected 'FT01' (an ExecuTorch data file)");
  }
  if (data.size() < kHeaderOffset + kHeaderLength) {
    return invalid(path + ": header at offset 8 is cut off: the file ends at byte " + std::to_string(data.size()) +
                   "; expected at least " + std::to_string(kHeaderOffset + kHeaderLength) + " bytes");
  }
  if (!detail::has_text_at(data, kHeaderOffset, kHeaderMagic)) {
    return invalid(path + ": header magic at offset 8 is '" + detail::show_bytes(data.subspan(kHeaderOffset, 4)) +
                   "'; expected 'FH01'");
  }
  PtdHeader header;
  header.length = detail::u32le(data, kHeaderOffset + 4);
  header.flatbuffer_offset = detail::u64le(data, kHeaderOffset + 8);
  header.flatbuffer_size = detail::u64le(data, kHeaderOffset + 16);
  header.segment_base_offset = detail::u64le(data, kHeaderOffset + 24);
  header.segment_data_size = detail::u64le(data, kHeaderOffset + 32);
  if (header.length < kHeaderLength) {
    return invalid(path + ": header length " + std::to_string(header.length) + " at offset 12 is too small; expected at least " +
                   std::to_string(kHeaderLength));
  }
  if (header.flatbuffer_offset < header.length || !range_fits(header.flatbuffer_offset, header.flatbuffer_size, data.size())) {
    return invalid(path + ": header flatbuffer_offset " + std::to_string(header.flatbuffer_offset) + " and flatbuffer_size " +
                   std::to_string(header.flatbuffer_size) + " do not fit the file (" + std::to_string(data.size()) +
                   " bytes); expected the header followed by the flatbuffer inside the file");
  }
  uint64_t flatbuffer_end = header.flatbuffer_offset + header.flatbuffer_size;
  if (header.segment_base_offset < flatbuffer_end ||
      !range_fits(header.segment_base_offset, header.segment_data_size, data.size())) {
    return invalid(path + ": header says " + std::to_string(header.segment_data_size) + " bytes of segments start at offset " +
                   std::to_string(header.segment_base_offset) + "; expected them after the flatbuffer (which ends at " +
                   std::to_string(flatbuffer_end) + ") and inside the file (" + std::to_string(data.size()) + " bytes)");
  }
  return header;
}

Result<TensorLayout> read_layout(const fb::ptd::TensorLayout& layout, const std::string& context) {
  TensorLayout out;
  out.scalar_type = static_cast<int8_t>(layout.scalar_type());
  if (layout.sizes()) out.sizes.assign(layout.sizes()->begin(), layout.sizes()->end());
  if (layout.dim_order()) out.dim_order.assign(layout.dim_order()->begin(), layout.dim_order()->end());
  // ExecuTorch reads dim_order with the length of sizes.
  if (out.dim_order.size() != out.sizes.size()) {
    return invalid(context + ": tensor layout has " + std::to_string(out.sizes.size()) + " sizes but " + std::to_string(out.dim_order.size()) +
                   " dim_order entries; expected as many of each");
  }
  for (int32_t size : out.sizes) {
    if (size < 0) return invalid(context + ": tensor layout size " + std::to_string(size) + " is negative; expected >= 0");
  }
  return out;
}

}  // namespace

Result<PtdFile> PtdFile::open(const std::string& path) {
  PTB_TRY(auto mapped, MappedFile::open(path));
  return parse(std::move(mapped));
}

Result<PtdFile> PtdFile::open_in(const BundleDir& dir, const std::string& relative) {
  PTB_TRY(auto mapped, MappedFile::open_in(dir, relative));
  return parse(std::move(mapped));
}

Result<PtdFile> PtdFile::parse(MappedFile file) {
  PtdFile ptd;
  const std::string path = file.path();
  ptd.file_ = std::move(file);
  Bytes data = ptd.file_.bytes();
  PTB_TRY(ptd.header_, read_header(data, path));

  uint64_t flatbuffer_end = ptd.header_.flatbuffer_offset + ptd.header_.flatbuffer_size;
  if (!detail::verifiable_size(flatbuffer_end)) {
    return invalid(path + ": flatbuffer of " + std::to_string(flatbuffer_end) + " bytes is too large; expected less than 2 GiB");
  }
  // Verified and read from a copy: the mapping shows what another process
  // writes into the file, so a flatbuffer verified there could be read back
  // changed, with offsets the verifier never saw. Everything is taken out of
  // it here; the segments stay in the mapping.
  const std::vector<uint8_t> copy(data.begin(), data.begin() + static_cast<ptrdiff_t>(flatbuffer_end));
  flatbuffers::Verifier verifier(copy.data(), copy.size(), detail::verifier_options(copy.size()));
  if (!fb::ptd::VerifyFlatTensorBuffer(verifier)) {
    return invalid(path + ": flatbuffer (" + std::to_string(flatbuffer_end) +
                   " bytes from offset 0) fails FlatBuffers verification; expected a valid FlatTensor");
  }
  const fb::ptd::FlatTensor* root = fb::ptd::GetFlatTensor(copy.data());
  ptd.version_ = root->version();

  uint64_t base = ptd.header_.segment_base_offset;
  uint64_t segment_bytes = ptd.header_.segment_data_size;
  if (const auto* segments = root->segments()) {
    ptd.segments_.reserve(segments->size());
    for (flatbuffers::uoffset_t i = 0; i < segments->size(); ++i) {
      const auto* segment = segments->Get(i);
      if (!range_fits(segment->offset(), segment->size(), segment_bytes)) {
        return invalid(path + ": segment " + std::to_string(i) + " (offset " + std::to_string(segment->offset()) + ", size " +
                       std::to_string(segment->size()) + ") extends past the " + std::to_string(segment_bytes) +
                       " bytes of segment data; expected it inside");
      }
      ptd.segments_.push_back({segment->offset(), segment->size(), base + segment->offset()});
    }
  }
  if (const auto* named = root->named_data()) {
    ptd.entries_.reserve(named->size());
    for (flatbuffers::uoffset_t i = 0; i < named->size(); ++i) {
      const auto* entry = named->Get(i);
      if (!entry->key()) return invalid(path + ": named data entry " + std::to_string(i) + " has no key; expected a key");
      PtdEntry out;
      out.key = entry->key()->str();
      std::string context = path + ": key '" + detail::show_text(out.key) + "'";
      if (entry->segment_index() >= ptd.segments_.size()) {
        return invalid(context + " refers to segment " + std::to_string(entry->segment_index()) + ", but the file has " +
                       std::to_string(ptd.segments_.size()) + " segments");
      }
      out.segment_index = entry->segment_index();
      out.file_offset = ptd.segments_[out.segment_index].file_offset;
      out.size = ptd.segments_[out.segment_index].size;
      if (entry->tensor_layout()) {
        PTB_TRY(out.layout, read_layout(*entry->tensor_layout(), context));
      }
      ptd.entries_.push_back(std::move(out));
    }
  }
  ptd.index_.build(ptd.entries_);
  if (auto twice = detail::first_duplicate_key(ptd.entries_)) {
    return invalid(path + ": key '" + detail::show_text(ptd.entries_[twice->first].key) + "' appears twice (named data entries " +
                   std::to_string(twice->first) + " and " + std::to_string(twice->second) +
                   "); expected each key once, as a loader and a check could otherwise take different bytes");
  }
  return ptd;
}

const PtdEntry* PtdFile::find(std::string_view key) const { return index_.find(entries_, key); }

Bytes PtdFile::bytes(const PtdEntry& entry) const {
  return file_.bytes().subspan(static_cast<size_t>(entry.file_offset), static_cast<size_t>(entry.size));
}

}  // namespace ptb
