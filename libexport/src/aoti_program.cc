#include "aoti_program.h"

#include "ptbundle/formats/segment_source.h"
#include "ptbundle/program/program_with_data.h"

namespace ptb::detail {
namespace {

constexpr uint32_t kHostBuffer = 1;
constexpr uint32_t kDeviceBuffer = 2;
// ExecuTorch's memory planning aligns every tensor to 16 bytes.
constexpr uint64_t kTensorAlignment = 16;

const char* kLeaf = R"({"type": null, "context": null, "children_spec": []})";

std::unique_ptr<fb::EValueT> tensor_value(const TensorSignature& signature, uint32_t buffer, uint64_t offset,
                                          bool on_device) {
  auto tensor = std::make_unique<fb::TensorT>();
  tensor->scalar_type = static_cast<fb::ScalarType>(signature.scalar_type);
  tensor->sizes = signature.sizes;
  for (size_t d = 0; d < signature.sizes.size(); ++d) tensor->dim_order.push_back(static_cast<uint8_t>(d));
  tensor->allocation_info = std::make_unique<fb::AllocationDetailsT>();
  tensor->allocation_info->memory_id = buffer;
  tensor->allocation_info->memory_offset_low = static_cast<uint32_t>(offset);
  tensor->allocation_info->memory_offset_high = static_cast<uint32_t>(offset >> 32);
  tensor->shape_dynamism =
      signature.bounded ? fb::TensorShapeDynamism::DYNAMIC_BOUND : fb::TensorShapeDynamism::STATIC;
  if (on_device) {
    tensor->extra_tensor_info = std::make_unique<fb::ExtraTensorInfoT>();
    tensor->extra_tensor_info->location = fb::TensorDataLocation::SEGMENT;
    tensor->extra_tensor_info->device_type = fb::DeviceType::CUDA;
  }
  auto value = std::make_unique<fb::EValueT>();
  value->val.Set(std::move(*tensor));
  return value;
}

std::unique_ptr<fb::InstructionT> kernel_call(int32_t op_index, std::vector<int32_t> args) {
  fb::KernelCallT call;
  call.op_index = op_index;
  call.args = std::move(args);
  auto instruction = std::make_unique<fb::InstructionT>();
  instruction->instr_args.Set(std::move(call));
  return instruction;
}

std::unique_ptr<fb::CompileSpecT> spec(const std::string& key, const std::string& value) {
  auto out = std::make_unique<fb::CompileSpecT>();
  out->key = key;
  out->value.assign(value.begin(), value.end());
  return out;
}

std::unique_ptr<fb::OperatorT> op(const char* name, const char* overload) {
  auto out = std::make_unique<fb::OperatorT>();
  out->name = name;
  out->overload = overload;
  return out;
}

}  // namespace

std::string input_tree_spec(size_t count) {
  std::string leaves;
  for (size_t i = 0; i < count; ++i) leaves += (i ? ", " : "") + std::string(kLeaf);
  return R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [)" +
         leaves + R"(]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])";
}

std::string output_tree_spec(size_t count) {
  // Appended piece by piece: GCC 12 -O2 reports a false -Wstringop-overflow
  // for the concatenations.
  std::string spec = "[1, ";
  if (count == 1) {
    spec += kLeaf;
    spec += "]";
    return spec;
  }
  spec += R"({"type": "builtins.tuple", "context": "null", "children_spec": [)";
  for (size_t i = 0; i < count; ++i) {
    if (i) spec += ", ";
    spec += kLeaf;
  }
  spec += "]}]";
  return spec;
}

std::unique_ptr<fb::ProgramT> make_single_delegate_program(const SingleDelegateProgram& spec_in) {
  auto plan = std::make_unique<fb::ExecutionPlanT>();
  plan->name = spec_in.method_name;
  plan->container_meta_type = std::make_unique<fb::ContainerMetadataT>();
  plan->container_meta_type->encoded_inp_str = input_tree_spec(spec_in.inputs.size());
  plan->container_meta_type->encoded_out_str = output_tree_spec(spec_in.outputs.size());

  // Values: host inputs, device inputs, device outputs, host outputs. Host
  // and device buffers each hold the inputs, then the outputs.
  const size_t n = spec_in.inputs.size(), m = spec_in.outputs.size();
  uint64_t host_end = 0, device_end = 0;
  std::vector<uint64_t> input_offsets, output_offsets;
  for (const auto& t : spec_in.inputs) {
    input_offsets.push_back(host_end);
    host_end = align_up(host_end + t.nbytes, kTensorAlignment);
  }
  for (const auto& t : spec_in.outputs) {
    output_offsets.push_back(host_end);
    host_end = align_up(host_end + t.nbytes, kTensorAlignment);
  }
  device_end = host_end;  // the device buffer mirrors the host layout
  for (size_t i = 0; i < n; ++i) plan->values.push_back(tensor_value(spec_in.inputs[i], kHostBuffer, input_offsets[i], false));
  for (size_t i = 0; i < n; ++i) plan->values.push_back(tensor_value(spec_in.inputs[i], kDeviceBuffer, input_offsets[i], true));
  for (size_t i = 0; i < m; ++i) plan->values.push_back(tensor_value(spec_in.outputs[i], kDeviceBuffer, output_offsets[i], true));
  for (size_t i = 0; i < m; ++i) plan->values.push_back(tensor_value(spec_in.outputs[i], kHostBuffer, output_offsets[i], false));
  auto host_input = [&](size_t i) { return static_cast<int32_t>(i); };
  auto device_input = [&](size_t i) { return static_cast<int32_t>(n + i); };
  auto device_output = [&](size_t i) { return static_cast<int32_t>(2 * n + i); };
  auto host_output = [&](size_t i) { return static_cast<int32_t>(2 * n + m + i); };

  for (size_t i = 0; i < n; ++i) plan->inputs.push_back(host_input(i));
  for (size_t i = 0; i < m; ++i) plan->outputs.push_back(host_output(i));
  plan->operators.push_back(op("et_copy::_h2d_copy", "out"));
  plan->operators.push_back(op("et_copy::_d2h_copy", "out"));

  auto chain = std::make_unique<fb::ChainT>();
  chain->inputs = plan->inputs;
  chain->outputs = plan->outputs;
  // Out-variant kernels take (self, out) and return out: args self, out, out.
  for (size_t i = 0; i < n; ++i) chain->instructions.push_back(kernel_call(0, {host_input(i), device_input(i), device_input(i)}));
  fb::DelegateCallT call;
  call.delegate_index = 0;
  for (size_t i = 0; i < n; ++i) call.args.push_back(device_input(i));
  for (size_t i = 0; i < m; ++i) call.args.push_back(device_output(i));
  auto delegate_instruction = std::make_unique<fb::InstructionT>();
  delegate_instruction->instr_args.Set(std::move(call));
  chain->instructions.push_back(std::move(delegate_instruction));
  for (size_t i = 0; i < m; ++i) chain->instructions.push_back(kernel_call(1, {device_output(i), host_output(i), host_output(i)}));
  plan->chains.push_back(std::move(chain));

  auto delegate = std::make_unique<fb::BackendDelegateT>();
  delegate->id = std::string(kCudaBackendId);
  delegate->processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
  delegate->processed->location = fb::DataLocation::SEGMENT;
  delegate->processed->index = kPayloadSegment;
  delegate->compile_specs.push_back(spec("method_name", spec_in.method_name));
  delegate->compile_specs.push_back(spec("data_name", spec_in.data_name));
  plan->delegates.push_back(std::move(delegate));

  plan->non_const_buffer_sizes = {0, static_cast<int64_t>(host_end), static_cast<int64_t>(device_end)};
  for (uint32_t buffer = 0; buffer < 3; ++buffer) {
    auto device = std::make_unique<fb::NonConstBufferDeviceT>();
    device->buffer_idx = static_cast<int32_t>(buffer);
    device->device_type = buffer == kDeviceBuffer ? fb::DeviceType::CUDA : fb::DeviceType::CPU;
    plan->non_const_buffer_device.push_back(std::move(device));
  }

  auto program = std::make_unique<fb::ProgramT>();
  program->version = 0;
  program->execution_plan.push_back(std::move(plan));
  program->constant_segment = std::make_unique<fb::SubsegmentOffsetsT>();
  program->constant_segment->segment_index = kConstantSegment;
  program->constant_segment->offsets = {0};
  auto library = std::make_unique<fb::NamedDataT>();
  library->key = spec_in.library_key;
  library->segment_index = kLibrarySegment;
  program->named_data.push_back(std::move(library));
  for (size_t i = 0; i < spec_in.kernel_file_keys.size(); ++i) {
    auto kernel = std::make_unique<fb::NamedDataT>();
    kernel->key = spec_in.kernel_file_keys[i];
    kernel->segment_index = kLibrarySegment + 1 + static_cast<uint32_t>(i);
    program->named_data.push_back(std::move(kernel));
  }
  return program;
}

}  // namespace ptb::detail
