#include "formats/program_check.h"

#include <cstdint>

#include "formats/wire.h"

namespace ptb::detail {
namespace {

template <class T>
uint64_t count(const flatbuffers::Vector<T>* vector) {
  return vector ? vector->size() : 0;
}

// Checks one index found at `field` against the `limit` entries of `what`.
Status check_index(int64_t index, uint64_t limit, const std::string& context, const std::string& field,
                   const std::string& what) {
  if (index < 0 || static_cast<uint64_t>(index) >= limit) {
    return invalid(context + ": " + field + " " + std::to_string(index) + " is out of range; expected an index into the " +
                   std::to_string(limit) + " " + what);
  }
  return {};
}

Status check_indices(const flatbuffers::Vector<int32_t>* indices, uint64_t limit, const std::string& context,
                     const std::string& field, const std::string& what) {
  if (!indices) return {};
  for (flatbuffers::uoffset_t i = 0; i < indices->size(); ++i) {
    PTB_CHECK(check_index(indices->Get(i), limit, context, field + "[" + std::to_string(uint64_t{i}) + "]", what));
  }
  return {};
}

// FlatBuffers' verifier (2.0) checks only that a vector's length prefix is
// 4-byte aligned; reading 8-byte elements through a misaligned pointer is
// undefined behaviour, so such vectors are checked here.
template <class T>
Status check_wide_vector(const flatbuffers::Vector<T>* vector, const std::string& context, const std::string& field) {
  if (!vector || vector->size() == 0) return {};
  if (reinterpret_cast<uintptr_t>(vector->Data()) % alignof(T) != 0) {
    return invalid(context + ": " + field + " is not " + std::to_string(uint64_t{alignof(T)}) +
                   "-byte aligned; expected its elements at their natural alignment");
  }
  return {};
}

Status check_subsegments(const fb::SubsegmentOffsets& sub, const std::vector<PteSegment>& segments,
                         const std::string& context) {
  PTB_CHECK(check_wide_vector(sub.offsets(), context, "offsets"));
  if (!sub.offsets() || sub.offsets()->size() == 0) return {};
  PTB_CHECK(check_index(sub.segment_index(), segments.size(), context, "segment_index", "segments"));
  uint64_t size = segments[sub.segment_index()].size;
  for (flatbuffers::uoffset_t i = 0; i < sub.offsets()->size(); ++i) {
    uint64_t offset = sub.offsets()->Get(i);
    if (offset > size) {
      return invalid(context + ": offsets[" + std::to_string(uint64_t{i}) + "] " + std::to_string(offset) + " lies past the end of segment " +
                     std::to_string(uint64_t{sub.segment_index()}) + "; expected at most " + std::to_string(size));
    }
  }
  return {};
}

// How many constant tensors a data_buffer_idx may name: the constant
// segment's offsets when the program has one, else the legacy inline buffers.
uint64_t constant_count(const fb::Program& program) {
  const auto* segment = program.constant_segment();
  if (segment && segment->offsets() && segment->offsets()->size() > 0) return segment->offsets()->size();
  return count(program.constant_buffer());
}

Status check_tensor(const fb::Program& program, const fb::Tensor& tensor, const std::string& context) {
  auto dynamism = static_cast<int>(tensor.shape_dynamism());
  if (dynamism < 0 || dynamism > 2) {
    return invalid(context + ": shape_dynamism " + std::to_string(dynamism) +
                   " is unknown; expected 0 (static), 1 (dynamic bound) or 2 (dynamic unbound)");
  }
  uint32_t buffer = tensor.data_buffer_idx();
  if (buffer == 0) return {};
  const auto* extra = tensor.extra_tensor_info();
  if (extra && extra->location() == fb::TensorDataLocation::EXTERNAL) return {};
  if (!tensor.allocation_info()) {
    return check_index(buffer, constant_count(program), context, "data_buffer_idx", "constant buffers");
  }
  const auto* mutables = program.mutable_data_segments();
  if (!mutables || mutables->size() == 0) return {};
  uint64_t which = extra ? extra->mutable_data_segments_idx() : 0;
  if (which >= mutables->size()) {
    return invalid(context + ": mutable_data_segments_idx " + std::to_string(which) + " is out of range; expected an index into the " +
                   std::to_string(uint64_t{mutables->size()}) + " mutable data segments");
  }
  return check_index(buffer, count(mutables->Get(static_cast<flatbuffers::uoffset_t>(which))->offsets()), context,
                     "data_buffer_idx", "mutable data offsets");
}

Status check_values(const fb::Program& program, const fb::ExecutionPlan& plan, const std::string& context) {
  if (!plan.values()) return {};
  uint64_t limit = plan.values()->size();
  for (flatbuffers::uoffset_t i = 0; i < plan.values()->size(); ++i) {
    const fb::EValue* value = plan.values()->Get(i);
    std::string here = context + ": value " + std::to_string(uint64_t{i});
    // The verifier accepts a union whose type is set but whose table is absent.
    if (value->val_type() != fb::KernelTypes::NONE && !value->val()) {
      return invalid(here + ": value of kind " + std::to_string(static_cast<int>(value->val_type())) +
                     " has no contents; expected its table");
    }
    switch (value->val_type()) {
      case fb::KernelTypes::Tensor:
        PTB_CHECK(check_tensor(program, *value->val_as_Tensor(), here));
        break;
      case fb::KernelTypes::IntList:
        PTB_CHECK(check_wide_vector(value->val_as_IntList()->items(), here, "items"));
        break;
      case fb::KernelTypes::DoubleList:
        PTB_CHECK(check_wide_vector(value->val_as_DoubleList()->items(), here, "items"));
        break;
      case fb::KernelTypes::TensorList:
        PTB_CHECK(check_indices(value->val_as_TensorList()->items(), limit, here, "items", "values"));
        break;
      case fb::KernelTypes::OptionalTensorList: {
        // -1 stands for None.
        const auto* items = value->val_as_OptionalTensorList()->items();
        for (flatbuffers::uoffset_t k = 0; items && k < items->size(); ++k) {
          if (items->Get(k) != -1) {
            PTB_CHECK(check_index(items->Get(k), limit, here, "items[" + std::to_string(uint64_t{k}) + "]", "values"));
          }
        }
        break;
      }
      default:
        break;
    }
  }
  return {};
}

Status check_instruction(const fb::Instruction& instruction, uint64_t num_instructions, const fb::ExecutionPlan& plan,
                         const std::string& here) {
  uint64_t values = count(plan.values());
  // The verifier accepts a union whose type is set but whose table is absent.
  if (!instruction.instr_args()) {
    return invalid(here + ": instruction of kind " + std::to_string(static_cast<int>(instruction.instr_args_type())) +
                   " has no arguments; expected its table");
  }
  switch (instruction.instr_args_type()) {
    case fb::InstructionArguments::KernelCall: {
      const auto* call = instruction.instr_args_as_KernelCall();
      PTB_CHECK(check_index(call->op_index(), count(plan.operators()), here, "op_index", "operators"));
      return check_indices(call->args(), values, here, "args", "values");
    }
    case fb::InstructionArguments::DelegateCall: {
      const auto* call = instruction.instr_args_as_DelegateCall();
      PTB_CHECK(check_index(call->delegate_index(), count(plan.delegates()), here, "delegate_index", "delegates"));
      return check_indices(call->args(), values, here, "args", "values");
    }
    case fb::InstructionArguments::MoveCall: {
      const auto* call = instruction.instr_args_as_MoveCall();
      PTB_CHECK(check_index(call->move_from(), values, here, "move_from", "values"));
      return check_index(call->move_to(), values, here, "move_to", "values");
    }
    case fb::InstructionArguments::JumpFalseCall: {
      const auto* call = instruction.instr_args_as_JumpFalseCall();
      PTB_CHECK(check_index(call->cond_value_index(), values, here, "cond_value_index", "values"));
      return check_index(call->destination_instruction(), num_instructions, here, "destination_instruction",
                         "instructions of the chain");
    }
    case fb::InstructionArguments::FreeCall:
      return check_index(instruction.instr_args_as_FreeCall()->value_index(), values, here, "value_index", "values");
    default:
      return invalid(here + ": instruction kind " + std::to_string(static_cast<int>(instruction.instr_args_type())) +
                     " is unknown; expected a kernel, delegate, move, jump or free call");
  }
}

Status check_chains(const fb::ExecutionPlan& plan, const std::string& context) {
  if (!plan.chains()) return {};
  uint64_t values = count(plan.values());
  for (flatbuffers::uoffset_t c = 0; c < plan.chains()->size(); ++c) {
    const fb::Chain* chain = plan.chains()->Get(c);
    std::string here = context + ": chain " + std::to_string(uint64_t{c});
    PTB_CHECK(check_indices(chain->inputs(), values, here, "inputs", "values"));
    PTB_CHECK(check_indices(chain->outputs(), values, here, "outputs", "values"));
    if (!chain->instructions()) continue;
    uint64_t n = chain->instructions()->size();
    for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
      PTB_CHECK(check_instruction(*chain->instructions()->Get(i), n, plan, here + " instruction " + std::to_string(uint64_t{i})));
    }
  }
  return {};
}

Result<std::vector<DelegateRef>> check_delegates(const fb::Program& program, const fb::ExecutionPlan& plan,
                                                 const std::vector<PteSegment>& segments, const std::string& context) {
  std::vector<DelegateRef> refs;
  if (!plan.delegates()) return refs;
  for (flatbuffers::uoffset_t d = 0; d < plan.delegates()->size(); ++d) {
    const fb::BackendDelegate* delegate = plan.delegates()->Get(d);
    std::string here = context + ": delegate " + std::to_string(uint64_t{d});
    if (!delegate->id()) return invalid(here + ": has no id; expected a backend name such as 'CudaBackend'");
    if (!delegate->processed()) return invalid(here + ": has no processed data reference; expected one");
    const auto* specs = delegate->compile_specs();
    for (flatbuffers::uoffset_t s = 0; specs && s < specs->size(); ++s) {
      if (!specs->Get(s)->key()) {
        return invalid(here + ": compile spec " + std::to_string(uint64_t{s}) + " has no key; expected a key");
      }
    }
    DelegateRef ref;
    ref.index = delegate->processed()->index();
    switch (delegate->processed()->location()) {
      case fb::DataLocation::INLINE:
        PTB_CHECK(check_index(ref.index, count(program.backend_delegate_data()), here, "inline data index",
                              "entries of backend_delegate_data"));
        break;
      case fb::DataLocation::SEGMENT:
        ref.in_segment = true;
        PTB_CHECK(check_index(ref.index, segments.size(), here, "segment index", "segments"));
        break;
      default:
        return invalid(here + ": data location " + std::to_string(static_cast<int>(delegate->processed()->location())) +
                       " is unknown; expected 0 (inline) or 1 (segment)");
    }
    refs.push_back(ref);
  }
  return refs;
}

}  // namespace

Result<std::vector<PteSegment>> check_segments(const fb::Program& program,
                                               const std::optional<PteExtendedHeader>& header,
                                               uint64_t data_size, const std::string& where) {
  std::vector<PteSegment> segments;
  uint64_t n = count(program.segments());
  if (n == 0) return segments;
  // Without an extended header ExecuTorch takes the segment base to be 0, so
  // segment offsets are file offsets (old programs list one empty segment).
  uint64_t base = header ? header->segment_base_offset : 0;
  // A header long enough to carry segment_data_size bounds the segments more
  // tightly than the file does.
  uint64_t end = header && header->segment_data_size != 0 ? base + header->segment_data_size : data_size;
  segments.reserve(n);
  for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
    const fb::DataSegment* segment = program.segments()->Get(i);
    if (!range_fits(segment->offset(), segment->size(), end - base)) {
      return invalid(where + ": segment " + std::to_string(uint64_t{i}) + " (offset " + std::to_string(segment->offset()) + ", size " +
                     std::to_string(segment->size()) + ", from base " + std::to_string(base) + ") extends past the segment data, which ends at offset " +
                     std::to_string(end) + "; expected it to end by then");
    }
    segments.push_back({segment->offset(), segment->size(), base + segment->offset()});
  }
  return segments;
}

Result<std::vector<PteNamedData>> check_named_data(const fb::Program& program,
                                                   const std::vector<PteSegment>& segments,
                                                   const std::string& where) {
  std::vector<PteNamedData> entries;
  if (!program.named_data()) return entries;
  entries.reserve(program.named_data()->size());
  for (flatbuffers::uoffset_t i = 0; i < program.named_data()->size(); ++i) {
    const fb::NamedData* entry = program.named_data()->Get(i);
    if (!entry->key()) return invalid(where + ": named data entry " + std::to_string(uint64_t{i}) + " has no key; expected a key");
    std::string key = entry->key()->str();
    if (entry->segment_index() >= segments.size()) {
      return invalid(where + ": named data '" + detail::show_text(key) + "' refers to segment " + std::to_string(uint64_t{entry->segment_index()}) +
                     ", but the program has " + std::to_string(uint64_t{segments.size()}) + " segments");
    }
    entries.push_back({std::move(key), entry->segment_index(), segments[entry->segment_index()].size});
  }
  return entries;
}

Status check_constants(const fb::Program& program, const std::vector<PteSegment>& segments, const std::string& where) {
  if (program.constant_segment()) {
    PTB_CHECK(check_subsegments(*program.constant_segment(), segments, where + ": constant_segment"));
  }
  if (const auto* mutables = program.mutable_data_segments()) {
    for (flatbuffers::uoffset_t i = 0; i < mutables->size(); ++i) {
      PTB_CHECK(check_subsegments(*mutables->Get(i), segments, where + ": mutable_data_segments[" + std::to_string(uint64_t{i}) + "]"));
    }
  }
  return {};
}

Result<std::vector<std::vector<DelegateRef>>> check_plans(const fb::Program& program,
                                                          const std::vector<PteSegment>& segments,
                                                          const std::string& where) {
  std::vector<std::vector<DelegateRef>> refs;
  if (!program.execution_plan()) return refs;
  for (flatbuffers::uoffset_t p = 0; p < program.execution_plan()->size(); ++p) {
    const fb::ExecutionPlan* plan = program.execution_plan()->Get(p);
    if (!plan->name()) return invalid(where + ": execution plan " + std::to_string(uint64_t{p}) + " has no name; expected a method name");
    std::string context = where + ": method '" + detail::show_text(plan->name()->str()) + "'";
    uint64_t values = count(plan->values());
    PTB_CHECK(check_values(program, *plan, context));
    PTB_CHECK(check_indices(plan->inputs(), values, context, "inputs", "values"));
    PTB_CHECK(check_indices(plan->outputs(), values, context, "outputs", "values"));
    if (const auto* ops = plan->operators()) {
      for (flatbuffers::uoffset_t i = 0; i < ops->size(); ++i) {
        if (!ops->Get(i)->name()) {
          return invalid(context + ": operator " + std::to_string(uint64_t{i}) + " has no name; expected an operator name");
        }
      }
    }
    PTB_CHECK(check_chains(*plan, context));
    PTB_CHECK(check_wide_vector(plan->non_const_buffer_sizes(), context, "non_const_buffer_sizes"));
    if (const auto* devices = plan->non_const_buffer_device()) {
      for (flatbuffers::uoffset_t i = 0; i < devices->size(); ++i) {
        PTB_CHECK(check_index(devices->Get(i)->buffer_idx(), count(plan->non_const_buffer_sizes()), context,
                              "non_const_buffer_device[" + std::to_string(uint64_t{i}) + "].buffer_idx", "non-constant buffers"));
      }
    }
    PTB_TRY(auto plan_refs, check_delegates(program, *plan, segments, context));
    refs.push_back(std::move(plan_refs));
  }
  return refs;
}

}  // namespace ptb::detail
