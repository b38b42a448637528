// The inspect object of a program: header, methods with their delegates and
// decoded CUDA payloads, segments with what uses them, named data.
#include "inspect/inspect_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/pte.h"
#include "formats/wire.h"

namespace ptb::detail {
namespace {

InspectJson value_json(const ValueSpec& value) {
  InspectJson out;
  out["kind"] = value.kind;
  if (value.tensor) {
    out["dtype"] = scalar_type_name(value.tensor->scalar_type);
    out["shape"] = value.tensor->sizes;
    out["dim_order"] = value.tensor->dim_order;
    out["dynamism"] = value.tensor->dynamism;
  }
  return out;
}

InspectJson values_json(const std::vector<ValueSpec>& values) {
  InspectJson out = InspectJson::array();
  for (const auto& value : values) out.push_back(value_json(value));
  return out;
}

InspectJson compile_spec_json(const CompileSpecEntry& spec) {
  InspectJson out;
  out["key"] = spec.key;
  if (spec.is_text()) {
    out["value"] = std::string(spec.value.begin(), spec.value.end());
    out["encoding"] = "text";
  } else {
    out["value"] = hex(Bytes(spec.value.data(), spec.value.size()));
    out["encoding"] = "hex";
  }
  return out;
}

// A blob the payload names by key: where it is, if the program holds it.
void blob_json(InspectJson& out, const std::string& prefix, const PteFile& pte, const std::string& key) {
  out[prefix + "_key"] = key;
  const PteNamedData* entry = pte.find_named_data(key);
  out[prefix + "_in_program"] = entry != nullptr;
  out[prefix + "_size"] = entry ? InspectJson(entry->size) : InspectJson(nullptr);
}

void kernels_json(InspectJson& out, const PteFile& pte, const std::string& key, const InspectOptions& options) {
  const PteNamedData* entry = pte.find_named_data(key);
  if (!options.scan_kernels || !entry) return;
  auto kernels = options.scan_kernels(pte.named_data_bytes(*entry), pte.name() + ": named data '" + wire::show_text(key) + "'");
  if (kernels.ok()) {
    out["kernels"] = std::move(kernels).value();
  } else {
    out["kernels_error"] = kernels.error().message;
  }
}

InspectJson cuda_payload_json(const PteFile& pte, const CudaPayload& payload, const InspectOptions& options) {
  InspectJson out;
  out["form"] = cuda_payload_form_name(payload.form);
  if (payload.form != CudaPayloadForm::MultiVariant) {
    blob_json(out, "library", pte, payload.so_key);
    kernels_json(out, pte, payload.so_key, options);
    blob_json(out, "weights", pte, payload.weights_key);
    return out;
  }
  out["variants"] = InspectJson::array();
  for (const auto& variant : payload.variants) {
    InspectJson v;
    v["target_sm"] = variant.target_sm;
    v["ptx_compute"] = variant.ptx_compute;
    v["fallback_only"] = variant.fallback_only;
    blob_json(v, "library", pte, variant.so_key);
    kernels_json(v, pte, variant.so_key, options);
    out["variants"].push_back(std::move(v));
  }
  out["weights"] = InspectJson::array();
  for (const auto& weight : payload.weights) {
    InspectJson w;
    w["fqn"] = weight.fqn;
    w["storage_key"] = weight.storage_key;
    w["storage_nbytes"] = weight.storage_nbytes;
    w["dtype"] = scalar_type_name(static_cast<int8_t>(weight.dtype));
    w["device_type"] = weight.device_type;
    w["storage_offset"] = weight.storage_offset;
    w["sizes"] = weight.sizes;
    w["strides"] = weight.strides;
    out["weights"].push_back(std::move(w));
  }
  return out;
}

InspectJson delegate_json(const PteFile& pte, const MethodInfo& method, size_t plan, size_t index,
                          const InspectOptions& options) {
  const DelegateInfo& delegate = method.delegates[index];
  InspectJson out;
  out["index"] = index;
  out["id"] = delegate.id;
  out["location"] = delegate.location;
  out["data_index"] = delegate.index;
  out["payload_size"] = delegate.payload_size;
  Bytes payload = pte.delegate_payload(plan, index);
  if (options.sha256) out["payload_sha256"] = to_hex(sha256(payload));
  out["compile_specs"] = InspectJson::array();
  for (const auto& spec : delegate.compile_specs) out["compile_specs"].push_back(compile_spec_json(spec));
  if (delegate.id == "CudaBackend") {
    std::string context = pte.name() + ": method '" + wire::show_text(method.name) + "' delegate " + std::to_string(index);
    auto decoded = decode_cuda_payload(payload, method.name, context);
    if (decoded.ok()) {
      out["cuda"] = cuda_payload_json(pte, *decoded, options);
    } else {
      out["cuda_error"] = decoded.error().message;
    }
  }
  return out;
}

// What each segment holds, for people reading the layout.
std::vector<std::vector<std::string>> segment_users(const PteFile& pte, const std::vector<MethodInfo>& methods) {
  std::vector<std::vector<std::string>> users(pte.segments().size());
  const fb::Program& program = pte.program();
  if (const auto* constants = program.constant_segment()) {
    if (constants->offsets() && constants->offsets()->size() > 0) users[constants->segment_index()].push_back("constant");
  }
  if (const auto* mutables = program.mutable_data_segments()) {
    for (const auto* sub : *mutables) {
      if (sub->offsets() && sub->offsets()->size() > 0) users[sub->segment_index()].push_back("mutable");
    }
  }
  for (const auto& method : methods) {
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      const DelegateInfo& delegate = method.delegates[d];
      if (delegate.location == "segment") {
        users[delegate.index].push_back("delegate:" + method.name + "[" + std::to_string(d) + "]");
      }
    }
  }
  for (const auto& entry : pte.named_data()) users[entry.segment_index].push_back("named_data:" + entry.key);
  return users;
}

InspectJson constants_json(const fb::Program& program) {
  InspectJson out;
  const auto* segment = program.constant_segment();
  if (segment && segment->offsets() && segment->offsets()->size() > 0) {
    out["storage"] = "segment";
    out["segment_index"] = segment->segment_index();
    // Entry 0 is the placeholder for "no constant data".
    out["count"] = segment->offsets()->size() - 1;
  } else if (program.constant_buffer() && program.constant_buffer()->size() > 0) {
    out["storage"] = "constant_buffer";
    out["segment_index"] = nullptr;
    out["count"] = program.constant_buffer()->size() - 1;
  } else {
    out["storage"] = "none";
    out["segment_index"] = nullptr;
    out["count"] = 0;
  }
  return out;
}

}  // namespace

std::string hex(Bytes bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

InspectJson inspect_program(const PteFile& pte, const InspectOptions& options) {
  InspectJson out;
  out["file_identifier"] = "ET12";
  if (const auto& header = pte.extended_header()) {
    out["extended_header"] = {{"length", header->length},
                              {"program_size", header->program_size},
                              {"segment_base_offset", header->segment_base_offset},
                              {"segment_data_size", header->segment_data_size}};
  } else {
    out["extended_header"] = nullptr;
  }
  out["program_version"] = pte.program().version();
  auto methods = describe_methods(pte);
  out["methods"] = InspectJson::array();
  for (size_t p = 0; p < methods.size(); ++p) {
    const MethodInfo& method = methods[p];
    InspectJson m;
    m["name"] = method.name;
    m["inputs"] = values_json(method.inputs);
    m["outputs"] = values_json(method.outputs);
    m["operators"] = method.operators;
    m["num_values"] = method.num_values;
    m["num_instructions"] = method.num_instructions;
    m["non_const_buffer_sizes"] = method.non_const_buffer_sizes;
    m["delegates"] = InspectJson::array();
    for (size_t d = 0; d < method.delegates.size(); ++d) m["delegates"].push_back(delegate_json(pte, method, p, d, options));
    out["methods"].push_back(std::move(m));
  }
  out["constants"] = constants_json(pte.program());

  auto users = segment_users(pte, methods);
  // Named data are whole segments: each blob is hashed once.
  std::vector<std::string> digests(pte.segments().size());
  out["segments"] = InspectJson::array();
  for (size_t s = 0; s < pte.segments().size(); ++s) {
    const PteSegment& segment = pte.segments()[s];
    uint64_t file_offset = pte.base_offset() + segment.file_offset;
    InspectJson j;
    j["index"] = s;
    j["offset"] = segment.offset;
    j["size"] = segment.size;
    j["file_offset"] = file_offset;
    j["alignment"] = offset_alignment(file_offset);
    j["used_by"] = users[s];
    if (options.sha256) {
      digests[s] = sha256_mapped_range(pte.file(), file_offset, segment.size);
      j["sha256"] = digests[s];
    }
    out["segments"].push_back(std::move(j));
  }
  out["named_data"] = InspectJson::array();
  for (const auto& entry : pte.named_data()) {
    uint64_t file_offset = pte.base_offset() + pte.segments()[entry.segment_index].file_offset;
    InspectJson j;
    j["key"] = entry.key;
    j["segment_index"] = entry.segment_index;
    j["size"] = entry.size;
    j["file_offset"] = file_offset;
    j["alignment"] = offset_alignment(file_offset);
    if (options.sha256) j["sha256"] = digests[entry.segment_index];
    out["named_data"].push_back(std::move(j));
  }
  return out;
}

}  // namespace ptb::detail
