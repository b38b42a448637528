#include "ptbundle/formats/pte_writer.h"

#include <flatbuffers/flatbuffers.h>

#include <set>

#include "formats/layout_writer.h"
#include "formats/program_pack.h"

namespace ptb {
namespace {

constexpr uint32_t kExtendedHeaderLength = 32;  // "eh00", u32 length, three u64
// Buffer and BackendDelegateInlineData carry force_align: 16, the largest in
// the schema; ExecuTorch pads the spliced header to it.
constexpr uint64_t kProgramMaxAlignment = 16;

// Every segment index the program uses must name one of `count` segments;
// checked here so that a caller's mistake is an error, not a broken file.
Status check_segment_references(const fb::ProgramT& program, size_t count, const std::string& path) {
  auto bad = [&](const std::string& what, uint64_t index) {
    return invalid(path + ": " + what + " refers to segment " + std::to_string(index) + "; expected an index below " +
                   std::to_string(count));
  };
  for (const auto& plan : program.execution_plan) {
    if (!plan) continue;
    for (size_t d = 0; d < plan->delegates.size(); ++d) {
      const auto& delegate = plan->delegates[d];
      if (!delegate || !delegate->processed) continue;
      if (delegate->processed->location == fb::DataLocation::SEGMENT && delegate->processed->index >= count)
        return bad(plan->name + " delegate " + std::to_string(d), delegate->processed->index);
      if (delegate->processed->location == fb::DataLocation::INLINE &&
          delegate->processed->index >= program.backend_delegate_data.size()) {
        return invalid(path + ": " + plan->name + " delegate " + std::to_string(d) + " refers to inline data " +
                       std::to_string(delegate->processed->index) + "; expected an index below " +
                       std::to_string(program.backend_delegate_data.size()));
      }
    }
  }
  std::set<std::string> keys;
  for (const auto& entry : program.named_data) {
    if (!entry) continue;
    if (entry->segment_index >= count) return bad("named data \"" + entry->key + "\"", entry->segment_index);
    if (!keys.insert(entry->key).second) return invalid(path + ": named data key \"" + entry->key + "\" appears twice");
  }
  if (program.constant_segment && !program.constant_segment->offsets.empty() &&
      program.constant_segment->segment_index >= count)
    return bad("constant_segment", program.constant_segment->segment_index);
  for (const auto& mutable_segment : program.mutable_data_segments)
    if (mutable_segment && mutable_segment->segment_index >= count)
      return bad("mutable_data_segments", mutable_segment->segment_index);
  return {};
}

}  // namespace

SegmentPlan plan_segments(const std::vector<SegmentSource>& segments, uint64_t segment_alignment) {
  SegmentPlan plan;
  uint64_t end = 0;
  for (const auto& segment : segments) {
    uint64_t offset = align_up(end, lcm_alignment(segment_alignment, segment.alignment));
    plan.offsets.push_back(offset);
    end = offset + segment.size;
  }
  plan.data_size = end;
  return plan;
}

Result<PteWriteLayout> write_pte(AtomicOutput& out, fb::ProgramT& program,
                                 const std::vector<SegmentSource>& segments, const PteWriteOptions& options,
                                 const Progress& progress) {
  const std::string& path = out.final_path();
  PTB_CHECK(check_segment_references(program, segments.size(), path));
  SegmentPlan plan = plan_segments(segments, options.segment_alignment);

  program.segments.clear();
  for (size_t i = 0; i < segments.size(); ++i) {
    auto segment = std::make_unique<fb::DataSegmentT>();
    segment->offset = plan.offsets[i];
    segment->size = segments[i].size;
    program.segments.push_back(std::move(segment));
  }

  flatbuffers::FlatBufferBuilder builder(1 << 16);
  builder.Finish(detail::pack_program(builder, program), fb::ProgramIdentifier());
  Bytes flatbuffer(builder.GetBufferPointer(), builder.GetSize());

  PteWriteLayout layout;
  layout.segment_offsets = plan.offsets;
  // ExecuTorch adds the extended header only when there are segment bytes
  // (add.pte lists one empty segment and has no header).
  if (plan.data_size == 0) {
    layout.program_size = flatbuffer.size();
    layout.file_size = flatbuffer.size();
    PTB_CHECK(out.write(flatbuffer));
    return layout;
  }

  uint64_t header_size = align_up(kExtendedHeaderLength,
                                  std::max<uint64_t>(kProgramMaxAlignment, builder.GetBufferMinAlignment()));
  layout.header_length = kExtendedHeaderLength;
  layout.program_size = header_size + flatbuffer.size();
  layout.segment_base_offset = align_up(layout.program_size, options.segment_alignment);
  layout.segment_data_size = plan.data_size;
  layout.file_size = layout.segment_base_offset + plan.data_size;

  std::vector<uint8_t> header = {'e', 'h', '0', '0'};
  detail::put_u32(header, kExtendedHeaderLength);
  detail::put_u64(header, layout.program_size);
  detail::put_u64(header, layout.segment_base_offset);
  detail::put_u64(header, layout.segment_data_size);
  header.resize(header_size, 0);

  PTB_CHECK(detail::write_spliced(out, flatbuffer, header));
  PTB_CHECK(detail::write_segments(out, segments, plan.offsets, layout.segment_base_offset, layout.file_size,
                                   progress));
  return layout;
}

Result<PteWriteLayout> write_pte_file(const std::string& path, fb::ProgramT& program,
                                      const std::vector<SegmentSource>& segments, const PteWriteOptions& options) {
  PTB_TRY(auto out, AtomicOutput::create(path));
  PTB_TRY(auto layout, write_pte(out, program, segments, options));
  PTB_CHECK(out.commit());
  return layout;
}

}  // namespace ptb
