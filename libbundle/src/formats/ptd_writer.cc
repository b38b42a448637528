#include "ptbundle/formats/ptd_writer.h"

#include <flatbuffers/flatbuffers.h>

#include <set>

#include "formats/layout_writer.h"
#include "formats/program_pack.h"
#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/formats/pte_writer.h"

namespace ptb {
namespace {

constexpr uint32_t kHeaderLength = 40;  // "FH01", u32 length, four u64
// serialize.py's _FLATBUFFER_ALIGNMENT: the flatbuffer after the header.
constexpr uint64_t kFlatbufferAlignment = 16;
constexpr uint32_t kFlatTensorVersion = 0;

Status check_contents(const PtdContents& contents, const std::string& path) {
  std::set<std::string> keys;
  for (size_t i = 0; i < contents.entries.size(); ++i) {
    const auto& entry = contents.entries[i];
    if (entry.key.empty()) return invalid(path + ": entry " + std::to_string(i) + " has an empty key");
    if (!keys.insert(entry.key).second) return invalid(path + ": key \"" + entry.key + "\" appears twice");
    if (entry.segment_index >= contents.segments.size()) {
      return invalid(path + ": key \"" + entry.key + "\" refers to segment " + std::to_string(entry.segment_index) +
                     "; expected an index below " + std::to_string(contents.segments.size()));
    }
  }
  return {};
}

std::unique_ptr<fb::ptd::TensorLayoutT> pack_layout(const TensorLayout& layout) {
  auto out = std::make_unique<fb::ptd::TensorLayoutT>();
  out->scalar_type = static_cast<fb::ScalarType>(layout.scalar_type);
  out->sizes = layout.sizes;
  out->dim_order = layout.dim_order;
  return out;
}

}  // namespace

uint32_t PtdContents::add(std::string key, SegmentSource data, std::optional<TensorLayout> layout) {
  auto index = static_cast<uint32_t>(segments.size());
  segments.push_back(data);
  entries.push_back({std::move(key), index, std::move(layout)});
  return index;
}

Result<PtdWriteLayout> write_ptd(AtomicOutput& out, const PtdContents& contents, const PtdWriteOptions& options,
                                 const Progress& progress) {
  PTB_CHECK(check_contents(contents, out.final_path()));
  SegmentPlan plan = plan_segments(contents.segments, options.segment_alignment);

  fb::ptd::FlatTensorT table;
  table.version = kFlatTensorVersion;
  for (size_t i = 0; i < contents.segments.size(); ++i) {
    auto segment = std::make_unique<fb::ptd::DataSegmentT>();
    segment->offset = plan.offsets[i];
    segment->size = contents.segments[i].size;
    table.segments.push_back(std::move(segment));
  }
  for (const auto& entry : contents.entries) {
    auto named = std::make_unique<fb::ptd::NamedDataT>();
    named->key = entry.key;
    named->segment_index = entry.segment_index;
    if (entry.layout) named->tensor_layout = pack_layout(*entry.layout);
    table.named_data.push_back(std::move(named));
  }
  flatbuffers::FlatBufferBuilder builder(4096);
  builder.Finish(detail::pack_flat_tensor(builder, table), fb::ptd::FlatTensorIdentifier());
  Bytes flatbuffer(builder.GetBufferPointer(), builder.GetSize());

  uint64_t header_size =
      align_up(kHeaderLength, std::max<uint64_t>(kFlatbufferAlignment, builder.GetBufferMinAlignment()));
  PtdWriteLayout layout;
  layout.header.length = kHeaderLength;
  layout.header.flatbuffer_offset = header_size;
  layout.header.flatbuffer_size = flatbuffer.size();
  layout.header.segment_base_offset = align_up(header_size + flatbuffer.size(), options.segment_alignment);
  layout.header.segment_data_size = plan.data_size;
  layout.segment_offsets = plan.offsets;
  layout.file_size = layout.header.segment_base_offset + plan.data_size;

  std::vector<uint8_t> header = {'F', 'H', '0', '1'};
  detail::put_u32(header, kHeaderLength);
  detail::put_u64(header, layout.header.flatbuffer_offset);
  detail::put_u64(header, layout.header.flatbuffer_size);
  detail::put_u64(header, layout.header.segment_base_offset);
  detail::put_u64(header, layout.header.segment_data_size);
  header.resize(header_size, 0);

  PTB_CHECK(detail::write_spliced(out, flatbuffer, header));
  // serialize.py pads the flatbuffer to the segment base even when there are
  // no segments; the reader expects the file to reach the base.
  PTB_CHECK(pad_to(out, layout.header.segment_base_offset));
  PTB_CHECK(detail::write_segments(out, contents.segments, plan.offsets, layout.header.segment_base_offset,
                                   layout.file_size, progress));
  return layout;
}

Result<PtdWriteLayout> write_ptd_file(const std::string& path, const PtdContents& contents,
                                      const PtdWriteOptions& options) {
  PTB_TRY(auto out, AtomicOutput::create(path));
  PTB_TRY(auto layout, write_ptd(out, contents, options));
  PTB_CHECK(out.commit());
  return layout;
}

}  // namespace ptb
