// A method as callers see it from outside. Runs only on an opened PteFile,
// whose indices were all checked, so nothing here can go out of range.
#include "ptbundle/formats/pte.h"
#include "formats/wire.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb {
namespace {

const char* dynamism_name(fb::TensorShapeDynamism dynamism) {
  switch (dynamism) {
    case fb::TensorShapeDynamism::DYNAMIC_BOUND:
      return "dynamic_bound";
    case fb::TensorShapeDynamism::DYNAMIC_UNBOUND:
      return "dynamic_unbound";
    default:
      return "static";
  }
}

ValueSpec describe_value(const fb::EValue& value) {
  ValueSpec spec;
  switch (value.val_type()) {
    case fb::KernelTypes::NONE:
    case fb::KernelTypes::Null:
      spec.kind = "none";
      break;
    case fb::KernelTypes::Int:
      spec.kind = "int";
      break;
    case fb::KernelTypes::Bool:
      spec.kind = "bool";
      break;
    case fb::KernelTypes::Double:
      spec.kind = "double";
      break;
    case fb::KernelTypes::String:
      spec.kind = "string";
      break;
    case fb::KernelTypes::IntList:
      spec.kind = "int_list";
      break;
    case fb::KernelTypes::DoubleList:
      spec.kind = "double_list";
      break;
    case fb::KernelTypes::BoolList:
      spec.kind = "bool_list";
      break;
    case fb::KernelTypes::TensorList:
      spec.kind = "tensor_list";
      break;
    case fb::KernelTypes::OptionalTensorList:
      spec.kind = "optional_tensor_list";
      break;
    case fb::KernelTypes::Tensor: {
      spec.kind = "tensor";
      const fb::Tensor* tensor = value.val_as_Tensor();
      TensorSpec t;
      t.scalar_type = static_cast<int8_t>(tensor->scalar_type());
      if (tensor->sizes()) t.sizes.assign(tensor->sizes()->begin(), tensor->sizes()->end());
      if (tensor->dim_order()) t.dim_order.assign(tensor->dim_order()->begin(), tensor->dim_order()->end());
      t.dynamism = dynamism_name(tensor->shape_dynamism());
      spec.tensor = std::move(t);
      break;
    }
    default:
      spec.kind = "unknown";
      break;
  }
  return spec;
}

std::vector<ValueSpec> describe_values(const fb::ExecutionPlan& plan, const flatbuffers::Vector<int32_t>* indices) {
  std::vector<ValueSpec> specs;
  if (!indices) return specs;
  for (int32_t index : *indices) specs.push_back(describe_value(*plan.values()->Get(static_cast<flatbuffers::uoffset_t>(index))));
  return specs;
}

DelegateInfo describe_delegate(const PteFile& pte, size_t plan_index, size_t delegate_index,
                               const fb::BackendDelegate& delegate) {
  DelegateInfo info;
  info.id = delegate.id()->str();
  bool in_segment = delegate.processed()->location() == fb::DataLocation::SEGMENT;
  info.location = in_segment ? "segment" : "inline";
  info.index = delegate.processed()->index();
  info.payload_size = pte.delegate_payload(plan_index, delegate_index).size();
  if (const auto* specs = delegate.compile_specs()) {
    for (const fb::CompileSpec* spec : *specs) {
      CompileSpecEntry entry;
      entry.key = spec->key()->str();
      if (spec->value()) entry.value.assign(spec->value()->begin(), spec->value()->end());
      info.compile_specs.push_back(std::move(entry));
    }
  }
  return info;
}

}  // namespace

bool CompileSpecEntry::is_text() const {
  for (uint8_t byte : value) {
    // Tabs and newlines are text; other control bytes mean a binary value.
    if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') return false;
    if (byte == 0x7f) return false;
  }
  return is_utf8(std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
}

const CompileSpecEntry* DelegateInfo::find_spec(std::string_view key) const {
  for (const auto& spec : compile_specs) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

std::vector<MethodInfo> describe_methods(const PteFile& pte) {
  std::vector<MethodInfo> methods;
  const auto* plans = pte.program().execution_plan();
  if (!plans) return methods;
  for (size_t p = 0; p < plans->size(); ++p) {
    const fb::ExecutionPlan& plan = *plans->Get(static_cast<flatbuffers::uoffset_t>(p));
    MethodInfo method;
    method.name = plan.name()->str();
    method.inputs = describe_values(plan, plan.inputs());
    method.outputs = describe_values(plan, plan.outputs());
    if (plan.operators()) {
      for (const fb::Operator* op : *plan.operators()) {
        std::string name = op->name()->str();
        if (op->overload() && op->overload()->size() > 0) name += "." + op->overload()->str();
        method.operators.push_back(std::move(name));
      }
    }
    if (plan.delegates()) {
      for (size_t d = 0; d < plan.delegates()->size(); ++d) {
        method.delegates.push_back(describe_delegate(pte, p, d, *plan.delegates()->Get(static_cast<flatbuffers::uoffset_t>(d))));
      }
    }
    method.num_values = plan.values() ? plan.values()->size() : 0;
    if (plan.chains()) {
      for (const fb::Chain* chain : *plan.chains()) method.num_instructions += chain->instructions() ? chain->instructions()->size() : 0;
    }
    if (plan.non_const_buffer_sizes()) {
      method.non_const_buffer_sizes.assign(plan.non_const_buffer_sizes()->begin(), plan.non_const_buffer_sizes()->end());
    }
    methods.push_back(std::move(method));
  }
  return methods;
}

}  // namespace ptb
