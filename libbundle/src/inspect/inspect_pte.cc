// The inspect model of a program: header, methods with their delegates and
// decoded CUDA payloads, segments with what uses them, named data.
#include "inspect/inspect_internal.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "formats/wire.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {
namespace {

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

InspectValue value_of(const ValueSpec& value) {
  InspectValue out;
  out.kind = value.kind;
  if (value.tensor) {
    out.tensor = InspectTensorSpec{scalar_type_name(value.tensor->scalar_type), value.tensor->sizes,
                                   value.tensor->dim_order, value.tensor->dynamism, {}};
  }
  return out;
}

std::vector<InspectValue> values_of(const std::vector<ValueSpec>& values) {
  std::vector<InspectValue> out;
  for (const auto& value : values) out.push_back(value_of(value));
  return out;
}

// The dynamic dims the method's library bounds (the first variant's: the
// variants of a method are one export compiled for several GPUs).
const std::vector<InspectDynamicDim>* library_dims(const std::vector<InspectDelegate>& delegates) {
  for (const InspectDelegate& delegate : delegates) {
    if (!delegate.cuda) continue;
    const InspectCudaPayload& payload = *delegate.cuda;
    const std::optional<InspectKernels>& kernels = payload.variants.empty() ? payload.kernels : payload.variants[0].kernels;
    if (kernels && kernels->runtime) return &kernels->runtime->dynamic_dims;
  }
  return nullptr;
}

// The library's bounds beside the signature's shapes: "[2..256, 64]".
void add_dim_bounds(std::vector<InspectValue>& inputs, const std::vector<InspectDynamicDim>* dims) {
  if (!dims) return;
  for (const InspectDynamicDim& d : *dims) {
    if (d.input >= inputs.size() || !inputs[d.input].tensor) continue;
    InspectTensorSpec& tensor = *inputs[d.input].tensor;
    if (d.dim >= tensor.shape.size()) continue;
    tensor.dim_bounds.resize(tensor.shape.size());
    tensor.dim_bounds[d.dim] = InspectDimRange{d.min, d.max};
  }
}

InspectCompileSpec compile_spec_of(const CompileSpecEntry& spec) {
  if (spec.is_text()) return {spec.key, std::string(spec.value.begin(), spec.value.end()), false};
  return {spec.key, hex(Bytes(spec.value.data(), spec.value.size())), true};
}

// A blob the payload names by key: where it is, if the program holds it.
InspectBlob blob_of(const PteFile& pte, const std::string& key) {
  InspectBlob out;
  out.key = key;
  const PteNamedData* entry = pte.find_named_data(key);
  out.in_program = entry != nullptr;
  if (entry) out.size = entry->size;
  return out;
}

std::optional<InspectKernels> kernels_of(const PteFile& pte, const std::string& key) {
  const PteNamedData* entry = pte.find_named_data(key);
  if (!entry) return std::nullopt;
  return inspect_kernels(pte.named_data_bytes(*entry), pte.name() + ": named data '" + detail::show_text(key) + "'");
}

InspectKernelFiles kernel_files_of_library(const PteFile& pte, const std::string& key) {
  InspectKernelFiles out;
  auto files = kernel_files_of(pte, key);
  if (!files.ok()) {
    out.error = files.error().message;
    return out;
  }
  for (const KernelFile& file : *files) {
    out.files.push_back({file.name, file.key, file.entry->size,
                         inspect_kernels(pte.named_data_bytes(*file.entry),
                                         pte.name() + ": named data '" + detail::show_text(file.key) + "'")});
  }
  return out;
}

InspectCudaPayload cuda_payload_of(const PteFile& pte, const CudaPayload& payload) {
  InspectCudaPayload out;
  out.form = cuda_payload_form_name(payload.form);
  out.multi_variant = payload.form == CudaPayloadForm::MultiVariant;
  if (!out.multi_variant) {
    out.library = blob_of(pte, payload.so_key);
    out.kernels = kernels_of(pte, payload.so_key);
    out.kernel_files = kernel_files_of_library(pte, payload.so_key);
    out.weights_blob = blob_of(pte, payload.weights_key);
    return out;
  }
  for (const auto& variant : payload.variants) {
    out.variants.push_back({variant.target_sm, variant.ptx_compute, variant.fallback_only, blob_of(pte, variant.so_key),
                            kernels_of(pte, variant.so_key), kernel_files_of_library(pte, variant.so_key)});
  }
  for (const auto& weight : payload.weights) {
    out.weights.push_back({weight.fqn, weight.storage_key, weight.storage_nbytes,
                           scalar_type_name(static_cast<int8_t>(weight.dtype)), weight.device_type,
                           weight.storage_offset, weight.sizes, weight.strides});
  }
  return out;
}

InspectDelegate delegate_of(const ProgramWithData& program, const MethodInfo& method, size_t plan, size_t index,
                            const InspectOptions& options) {
  const PteFile& pte = program.pte();
  const DelegateInfo& delegate = method.delegates[index];
  InspectDelegate out;
  out.index = index;
  out.id = delegate.id;
  out.location = delegate.location;
  out.data_index = delegate.index;
  out.payload_size = delegate.payload_size;
  if (options.sha256) out.payload_sha256 = to_hex(sha256(pte.delegate_payload(plan, index)));
  for (const auto& spec : delegate.compile_specs) out.compile_specs.push_back(compile_spec_of(spec));
  for (const CudaDelegate* cuda : program.cuda_delegates_of(plan)) {
    if (cuda->index != index) continue;
    if (cuda->payload) {
      out.cuda = cuda_payload_of(pte, *cuda->payload);
    } else {
      out.cuda_error = cuda->error->message;
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

InspectConstants constants_of(const fb::Program& program) {
  const auto* segment = program.constant_segment();
  // Entry 0 is the placeholder for "no constant data".
  if (segment && segment->offsets() && segment->offsets()->size() > 0) {
    return {"segment", segment->segment_index(), segment->offsets()->size() - 1};
  }
  if (program.constant_buffer() && program.constant_buffer()->size() > 0) {
    return {"constant_buffer", std::nullopt, program.constant_buffer()->size() - 1};
  }
  return {"none", std::nullopt, 0};
}

}  // namespace

Result<InspectProgram> inspect_program(const ProgramWithData& program, const InspectOptions& options,
                                       const InspectDigests& digests) {
  const PteFile& pte = program.pte();
  InspectProgram out;
  if (const auto& header = pte.extended_header()) {
    out.extended_header =
        InspectExtendedHeader{header->length, header->program_size, header->segment_base_offset, header->segment_data_size};
  }
  out.program_version = pte.program().version();
  const std::vector<MethodInfo>& methods = program.methods();
  for (size_t p = 0; p < methods.size(); ++p) {
    const MethodInfo& method = methods[p];
    InspectMethod m;
    m.name = method.name;
    m.inputs = values_of(method.inputs);
    m.outputs = values_of(method.outputs);
    m.operators = method.operators;
    m.num_values = method.num_values;
    m.num_instructions = method.num_instructions;
    m.non_const_buffer_sizes = method.non_const_buffer_sizes;
    for (size_t d = 0; d < method.delegates.size(); ++d) m.delegates.push_back(delegate_of(program, method, p, d, options));
    add_dim_bounds(m.inputs, library_dims(m.delegates));
    out.methods.push_back(std::move(m));
  }
  out.constants = constants_of(pte.program());

  auto users = segment_users(pte, methods);
  uint64_t segment_bytes = 0;
  for (const PteSegment& segment : pte.segments()) segment_bytes += segment.size;
  for (size_t s = 0; s < pte.segments().size(); ++s) {
    const PteSegment& segment = pte.segments()[s];
    uint64_t file_offset = pte.base_offset() + segment.file_offset;
    InspectSegment j{s, segment.offset, segment.size, file_offset, offset_alignment(file_offset), std::move(users[s]), {}};
    if (options.sha256) {
      PTB_TRY(j.sha256, digests.range(pte.file(), file_offset, segment.size));
    }
    out.segments.push_back(std::move(j));
  }
  // Named data are whole segments: each blob is hashed once, with its segment.
  for (const auto& entry : pte.named_data()) {
    const InspectSegment& segment = out.segments[entry.segment_index];
    out.named_data.push_back(
        {entry.key, entry.segment_index, entry.size, segment.file_offset, segment.alignment, segment.sha256});
  }
  return out;
}

}  // namespace ptb::detail
