// The inspect objects of a data file (.ptd) and of a bundled program (.bpte).
#include "inspect/inspect_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/ptd.h"

namespace ptb::detail {
namespace {

InspectJson bundled_value_json(const BundledValue& value) {
  InspectJson out;
  out["kind"] = value.kind;
  if (value.tensor) {
    out["dtype"] = scalar_type_name(value.tensor->scalar_type);
    out["shape"] = value.tensor->sizes;
    out["dim_order"] = value.tensor->dim_order;
    out["size"] = value.tensor->data.size();
  } else if (value.kind == "int") {
    out["value"] = value.int_value;
  } else if (value.kind == "bool") {
    out["value"] = value.bool_value;
  } else {
    out["value"] = value.double_value;
  }
  return out;
}

InspectJson bundled_values_json(const std::vector<BundledValue>& values) {
  InspectJson out = InspectJson::array();
  for (const auto& value : values) out.push_back(bundled_value_json(value));
  return out;
}

}  // namespace

InspectJson inspect_data(const PtdFile& ptd, const InspectOptions& options) {
  InspectJson out;
  out["file_identifier"] = "FT01";
  const PtdHeader& header = ptd.header();
  out["header"] = {{"length", header.length},
                   {"flatbuffer_offset", header.flatbuffer_offset},
                   {"flatbuffer_size", header.flatbuffer_size},
                   {"segment_base_offset", header.segment_base_offset},
                   {"segment_data_size", header.segment_data_size}};
  out["version"] = ptd.version();
  out["segments"] = InspectJson::array();
  for (size_t s = 0; s < ptd.segments().size(); ++s) {
    const PtdSegment& segment = ptd.segments()[s];
    InspectJson j;
    j["index"] = s;
    j["offset"] = segment.offset;
    j["size"] = segment.size;
    j["file_offset"] = segment.file_offset;
    j["alignment"] = offset_alignment(segment.file_offset);
    out["segments"].push_back(std::move(j));
  }
  out["named_data"] = InspectJson::array();
  for (const auto& entry : ptd.entries()) {
    InspectJson j;
    j["key"] = entry.key;
    j["segment_index"] = entry.segment_index;
    j["size"] = entry.size;
    j["file_offset"] = entry.file_offset;
    j["alignment"] = offset_alignment(entry.file_offset);
    if (entry.layout) {
      j["tensor_layout"] = {{"dtype", scalar_type_name(entry.layout->scalar_type)},
                            {"shape", entry.layout->sizes},
                            {"dim_order", entry.layout->dim_order}};
    } else {
      j["tensor_layout"] = nullptr;
    }
    if (options.sha256) j["sha256"] = sha256_mapped_range(ptd.file(), entry.file_offset, entry.size);
    out["named_data"].push_back(std::move(j));
  }
  return out;
}

InspectJson inspect_bundled(const BpteFile& bpte, const InspectOptions& options) {
  InspectJson out;
  out["file_identifier"] = "BP08";
  out["version"] = bpte.version();
  InspectJson program;
  program["offset"] = bpte.program().base_offset();
  program["size"] = bpte.program().bytes().size();
  program.update(inspect_program(bpte.program(), options));
  out["program"] = std::move(program);
  out["test_suites"] = InspectJson::array();
  for (const auto& suite : bpte.test_suites()) {
    InspectJson s;
    s["method"] = suite.method_name;
    s["test_cases"] = InspectJson::array();
    for (const auto& test : suite.test_cases) {
      s["test_cases"].push_back(
          {{"inputs", bundled_values_json(test.inputs)}, {"expected_outputs", bundled_values_json(test.expected_outputs)}});
    }
    out["test_suites"].push_back(std::move(s));
  }
  return out;
}

}  // namespace ptb::detail
