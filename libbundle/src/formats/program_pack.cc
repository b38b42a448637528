#include "formats/program_pack.h"

#include <string>
#include <vector>

namespace ptb::detail {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// Buffer.storage and BackendDelegateInlineData.data carry force_align: 16.
constexpr size_t kForcedAlignment = 16;

template <class T, class Packer>
auto pack_all(FlatBufferBuilder& b, const std::vector<std::unique_ptr<T>>& items, Packer pack) {
  using Out = decltype(pack(b, *items.front()));
  std::vector<Out> offsets;
  offsets.reserve(items.size());
  for (const auto& item : items) {
    if (!item) continue;  // a null entry cannot be expressed in a flatbuffer vector
    offsets.push_back(pack(b, *item));
  }
  return b.CreateVector(offsets);
}

Offset<fb::Tensor> pack_tensor(FlatBufferBuilder& b, const fb::TensorT& t) {
  auto sizes = b.CreateVector(t.sizes);
  auto dim_order = b.CreateVector(t.dim_order);
  auto allocation = t.allocation_info ? fb::CreateAllocationDetails(b, t.allocation_info.get()) : 0;
  auto extra = t.extra_tensor_info ? fb::CreateExtraTensorInfo(b, t.extra_tensor_info.get()) : 0;
  return fb::CreateTensor(b, t.scalar_type, t.storage_offset, sizes, dim_order, t.requires_grad, t.data_buffer_idx,
                          allocation, t.layout, t.shape_dynamism, extra);
}

Offset<void> pack_kernel_value(FlatBufferBuilder& b, const fb::KernelTypesUnion& v) {
  using K = fb::KernelTypes;
  switch (v.type) {
    case K::Null: return fb::CreateNull(b).Union();
    case K::Int: return fb::CreateInt(b, v.AsInt()).Union();
    case K::Bool: return fb::CreateBool(b, v.AsBool()).Union();
    case K::Double: return fb::CreateDouble(b, v.AsDouble()).Union();
    case K::Tensor: return pack_tensor(b, *v.AsTensor()).Union();
    case K::String: return fb::CreateString(b, b.CreateString(v.AsString()->string_val)).Union();
    case K::IntList: return fb::CreateIntList(b, b.CreateVector(v.AsIntList()->items)).Union();
    case K::DoubleList: return fb::CreateDoubleList(b, b.CreateVector(v.AsDoubleList()->items)).Union();
    case K::BoolList: return fb::CreateBoolList(b, b.CreateVector(v.AsBoolList()->items)).Union();
    case K::TensorList: return fb::CreateTensorList(b, b.CreateVector(v.AsTensorList()->items)).Union();
    case K::OptionalTensorList:
      return fb::CreateOptionalTensorList(b, b.CreateVector(v.AsOptionalTensorList()->items)).Union();
    default: return 0;
  }
}

Offset<fb::EValue> pack_value(FlatBufferBuilder& b, const fb::EValueT& value) {
  bool present = value.val.value != nullptr;
  auto val = present ? pack_kernel_value(b, value.val) : 0;
  return fb::CreateEValue(b, present ? value.val.type : fb::KernelTypes::NONE, val);
}

Offset<void> pack_instruction_args(FlatBufferBuilder& b, const fb::InstructionArgumentsUnion& a) {
  using I = fb::InstructionArguments;
  switch (a.type) {
    case I::KernelCall:
      return fb::CreateKernelCall(b, a.AsKernelCall()->op_index, b.CreateVector(a.AsKernelCall()->args)).Union();
    case I::DelegateCall:
      return fb::CreateDelegateCall(b, a.AsDelegateCall()->delegate_index, b.CreateVector(a.AsDelegateCall()->args))
          .Union();
    case I::MoveCall: return fb::CreateMoveCall(b, a.AsMoveCall()).Union();
    case I::JumpFalseCall: return fb::CreateJumpFalseCall(b, a.AsJumpFalseCall()).Union();
    case I::FreeCall: return fb::CreateFreeCall(b, a.AsFreeCall()).Union();
    default: return 0;
  }
}

Offset<fb::Instruction> pack_instruction(FlatBufferBuilder& b, const fb::InstructionT& instruction) {
  bool present = instruction.instr_args.value != nullptr;
  auto args = present ? pack_instruction_args(b, instruction.instr_args) : 0;
  return fb::CreateInstruction(b, present ? instruction.instr_args.type : fb::InstructionArguments::NONE, args);
}

Offset<fb::Frame> pack_frame(FlatBufferBuilder& b, const fb::FrameT& f) {
  return fb::CreateFrame(b, b.CreateString(f.filename), f.lineno, b.CreateString(f.name), b.CreateString(f.context));
}

Offset<fb::Chain> pack_chain(FlatBufferBuilder& b, const fb::ChainT& c) {
  auto inputs = b.CreateVector(c.inputs);
  auto outputs = b.CreateVector(c.outputs);
  auto instructions = pack_all(b, c.instructions, pack_instruction);
  // stacktrace is Optional in ExecuTorch's schema.
  Offset<flatbuffers::Vector<Offset<fb::FrameList>>> stacktrace = 0;
  if (!c.stacktrace.empty()) {
    stacktrace = pack_all(b, c.stacktrace, [](FlatBufferBuilder& bb, const fb::FrameListT& list) {
      return fb::CreateFrameList(bb, pack_all(bb, list.items, pack_frame));
    });
  }
  return fb::CreateChain(b, inputs, outputs, instructions, stacktrace);
}

Offset<fb::BackendDelegate> pack_delegate(FlatBufferBuilder& b, const fb::BackendDelegateT& d) {
  auto id = b.CreateString(d.id);
  auto processed = d.processed ? fb::CreateBackendDelegateDataReference(b, d.processed.get()) : 0;
  auto specs = pack_all(b, d.compile_specs, [](FlatBufferBuilder& bb, const fb::CompileSpecT& spec) {
    return fb::CreateCompileSpec(bb, bb.CreateString(spec.key), bb.CreateVector(spec.value));
  });
  return fb::CreateBackendDelegate(b, id, processed, specs);
}

Offset<fb::ExecutionPlan> pack_plan(FlatBufferBuilder& b, const fb::ExecutionPlanT& p) {
  auto name = b.CreateString(p.name);
  Offset<fb::ContainerMetadata> meta = 0;
  if (p.container_meta_type) {
    meta = fb::CreateContainerMetadata(b, b.CreateString(p.container_meta_type->encoded_inp_str),
                                       b.CreateString(p.container_meta_type->encoded_out_str));
  }
  auto values = pack_all(b, p.values, pack_value);
  auto inputs = b.CreateVector(p.inputs);
  auto outputs = b.CreateVector(p.outputs);
  auto chains = pack_all(b, p.chains, pack_chain);
  auto operators = pack_all(b, p.operators, [](FlatBufferBuilder& bb, const fb::OperatorT& op) {
    return fb::CreateOperator(bb, bb.CreateString(op.name), bb.CreateString(op.overload));
  });
  auto delegates = pack_all(b, p.delegates, pack_delegate);
  auto buffer_sizes = b.CreateVector(p.non_const_buffer_sizes);
  // A newer field; ExecuTorch writes it only for programs that place buffers on devices.
  Offset<flatbuffers::Vector<Offset<fb::NonConstBufferDevice>>> devices = 0;
  if (!p.non_const_buffer_device.empty()) {
    devices = pack_all(b, p.non_const_buffer_device, [](FlatBufferBuilder& bb, const fb::NonConstBufferDeviceT& d) {
      return fb::CreateNonConstBufferDevice(bb, &d);
    });
  }
  return fb::CreateExecutionPlan(b, name, meta, values, inputs, outputs, chains, operators, delegates, buffer_sizes,
                                 devices);
}

Offset<fb::SubsegmentOffsets> pack_subsegments(FlatBufferBuilder& b, const fb::SubsegmentOffsetsT& s) {
  return fb::CreateSubsegmentOffsets(b, s.segment_index, b.CreateVector(s.offsets));
}

}  // namespace

Offset<fb::Program> pack_program(FlatBufferBuilder& b, const fb::ProgramT& program) {
  auto plans = pack_all(b, program.execution_plan, pack_plan);
  auto constants = pack_all(b, program.constant_buffer, [](FlatBufferBuilder& bb, const fb::BufferT& buffer) {
    bb.ForceVectorAlignment(buffer.storage.size(), sizeof(uint8_t), kForcedAlignment);
    return fb::CreateBuffer(bb, bb.CreateVector(buffer.storage));
  });
  auto inline_data =
      pack_all(b, program.backend_delegate_data, [](FlatBufferBuilder& bb, const fb::BackendDelegateInlineDataT& d) {
        bb.ForceVectorAlignment(d.data.size(), sizeof(uint8_t), kForcedAlignment);
        return fb::CreateBackendDelegateInlineData(bb, bb.CreateVector(d.data));
      });
  auto segments = pack_all(b, program.segments, [](FlatBufferBuilder& bb, const fb::DataSegmentT& s) {
    return fb::CreateDataSegment(bb, &s);
  });
  auto constant_segment = program.constant_segment ? pack_subsegments(b, *program.constant_segment) : 0;
  Offset<flatbuffers::Vector<Offset<fb::SubsegmentOffsets>>> mutable_segments = 0;
  if (!program.mutable_data_segments.empty())
    mutable_segments = pack_all(b, program.mutable_data_segments, pack_subsegments);
  Offset<flatbuffers::Vector<Offset<fb::NamedData>>> named = 0;
  if (!program.named_data.empty()) {
    named = pack_all(b, program.named_data, [](FlatBufferBuilder& bb, const fb::NamedDataT& entry) {
      return fb::CreateNamedData(bb, bb.CreateString(entry.key), entry.segment_index);
    });
  }
  return fb::CreateProgram(b, program.version, plans, constants, inline_data, segments, constant_segment,
                           mutable_segments, named);
}

Offset<fb::ptd::FlatTensor> pack_flat_tensor(FlatBufferBuilder& b, const fb::ptd::FlatTensorT& table) {
  auto segments = pack_all(b, table.segments, [](FlatBufferBuilder& bb, const fb::ptd::DataSegmentT& s) {
    return fb::ptd::CreateDataSegment(bb, &s);
  });
  auto named = pack_all(b, table.named_data, [](FlatBufferBuilder& bb, const fb::ptd::NamedDataT& entry) {
    auto key = bb.CreateString(entry.key);
    Offset<fb::ptd::TensorLayout> layout = 0;
    if (entry.tensor_layout) {
      layout = fb::ptd::CreateTensorLayout(bb, entry.tensor_layout->scalar_type,
                                           bb.CreateVector(entry.tensor_layout->sizes),
                                           bb.CreateVector(entry.tensor_layout->dim_order));
    }
    return fb::ptd::CreateNamedData(bb, key, entry.segment_index, layout);
  });
  return fb::ptd::CreateFlatTensor(b, table.version, segments, named);
}

}  // namespace ptb::detail
