// The inspect models of a data file (.ptd) and of a bundled program (.bpte).
#include "inspect/inspect_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {
namespace {

std::vector<InspectBundledValue> bundled_values_of(const std::vector<BundledValue>& values) {
  std::vector<InspectBundledValue> out;
  for (const BundledValue& value : values) {
    InspectBundledValue v;
    v.kind = value.kind;
    if (value.tensor) {
      v.tensor = InspectBundledTensor{scalar_type_name(value.tensor->scalar_type), value.tensor->sizes,
                                      value.tensor->dim_order, value.tensor->data.size()};
    } else if (value.kind == "int") {
      v.value = value.int_value;
    } else if (value.kind == "bool") {
      v.value = value.bool_value;
    } else {
      v.value = value.double_value;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

Result<InspectDataFile> inspect_data(const PtdFile& ptd, const InspectOptions& options, const InspectDigests& digests) {
  InspectDataFile out;
  const PtdHeader& header = ptd.header();
  out.header = {header.length, header.flatbuffer_offset, header.flatbuffer_size, header.segment_base_offset,
                header.segment_data_size};
  out.version = ptd.version();
  for (size_t s = 0; s < ptd.segments().size(); ++s) {
    const PtdSegment& segment = ptd.segments()[s];
    out.segments.push_back({s, segment.offset, segment.size, segment.file_offset, offset_alignment(segment.file_offset), {}, {}});
  }
  uint64_t blob_bytes = 0;
  for (const auto& entry : ptd.entries()) blob_bytes += entry.size;
  for (const auto& entry : ptd.entries()) {
    InspectDataBlob blob{entry.key, entry.segment_index, entry.size, entry.file_offset, offset_alignment(entry.file_offset), {}, {}};
    if (entry.layout) {
      blob.tensor_layout = InspectTensorLayout{scalar_type_name(entry.layout->scalar_type), entry.layout->sizes,
                                               entry.layout->dim_order};
    }
    if (options.sha256) {
      PTB_TRY(blob.sha256, digests.range(ptd.file(), entry.file_offset, entry.size));
    }
    out.named_data.push_back(std::move(blob));
  }
  return out;
}

Result<InspectBundled> inspect_bundled(const BpteFile& bpte, const InspectOptions& options, const InspectDigests& digests) {
  InspectBundled out;
  out.version = bpte.version();
  out.program.offset = bpte.program().base_offset();
  out.program.size = bpte.program().bytes().size();
  // The program is borrowed from `bpte` for the length of this call.
  const ProgramWithData inner(std::shared_ptr<const PteFile>(std::shared_ptr<const PteFile>(), &bpte.program()), nullptr);
  PTB_TRY(out.program.program, inspect_program(inner, options, digests));
  for (const auto& suite : bpte.test_suites()) {
    InspectTestSuite s;
    s.method = suite.method_name;
    for (const auto& test : suite.test_cases) {
      s.test_cases.push_back({bundled_values_of(test.inputs), bundled_values_of(test.expected_outputs)});
    }
    out.test_suites.push_back(std::move(s));
  }
  return out;
}

}  // namespace ptb::detail
