// The first difference between two execution plans, field by field, with the
// field's path ("values[4].val(Tensor).sizes": 2 entries vs 3).
//
// Both plans are first normalized the same way (what may differ between
// exports for different GPUs is taken out) and packed again through the
// object API, so that absent and default fields read alike on both sides.
// The walk uses the schema's mini-reflection tables (flatc --reflect-names),
// so every field of every table is compared, including fields added to the
// schema later, without a hand-written comparison to keep in step.
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstring>

#include <flatbuffers/minireflect.h>

#include "merge/merge_internal.h"
#include "ptbundle/base/text.h"

namespace ptb::detail {
namespace {

using flatbuffers::ElementaryType;
using flatbuffers::Table;
using flatbuffers::TypeTable;

// Compile specs that say how an export was built, not what it computes.
constexpr std::array<std::string_view, 2> kBuildOnlySpecs = {"cuda_include_ptx", "data_name"};

// The order in which a plan's fields are compared: what a person recognizes
// first (inputs, outputs, values) before the bookkeeping.
constexpr std::array<std::string_view, 9> kPlanFieldOrder = {
    "inputs", "outputs", "values", "operators", "delegates", "chains",
    "non_const_buffer_sizes", "non_const_buffer_device", "container_meta_type"};

size_t scalar_size(ElementaryType type) {
  switch (type) {
    case flatbuffers::ET_UTYPE:
    case flatbuffers::ET_BOOL:
    case flatbuffers::ET_CHAR:
    case flatbuffers::ET_UCHAR: return 1;
    case flatbuffers::ET_SHORT:
    case flatbuffers::ET_USHORT: return 2;
    case flatbuffers::ET_INT:
    case flatbuffers::ET_UINT:
    case flatbuffers::ET_FLOAT: return 4;
    case flatbuffers::ET_LONG:
    case flatbuffers::ET_ULONG:
    case flatbuffers::ET_DOUBLE: return 8;
    default: return 0;
  }
}

bool is_scalar(ElementaryType type) { return scalar_size(type) != 0; }

// An absent scalar reads as zero: every default in the program schema is zero,
// and both sides were packed by the same code, which omits defaults alike.
std::string show_scalar(ElementaryType type, const uint8_t* at, const TypeTable* enum_type) {
  uint8_t raw[8] = {};
  if (at) std::memcpy(raw, at, scalar_size(type));
  auto read = [&raw](auto zero) {
    decltype(zero) value;
    std::memcpy(&value, raw, sizeof value);
    return value;
  };
  int64_t integer = 0;
  switch (type) {
    case flatbuffers::ET_BOOL: return read(uint8_t{}) ? "true" : "false";
    case flatbuffers::ET_CHAR: integer = read(int8_t{}); break;
    case flatbuffers::ET_UTYPE:
    case flatbuffers::ET_UCHAR: integer = read(uint8_t{}); break;
    case flatbuffers::ET_SHORT: integer = read(int16_t{}); break;
    case flatbuffers::ET_USHORT: integer = read(uint16_t{}); break;
    case flatbuffers::ET_INT: integer = read(int32_t{}); break;
    case flatbuffers::ET_UINT: integer = read(uint32_t{}); break;
    case flatbuffers::ET_LONG: integer = read(int64_t{}); break;
    case flatbuffers::ET_ULONG: return std::to_string(read(uint64_t{}));
    case flatbuffers::ET_FLOAT: return std::to_string(read(float{}));
    case flatbuffers::ET_DOUBLE: return std::to_string(read(double{}));
    default: return "?";
  }
  if (enum_type && enum_type->names) {
    for (size_t i = 0; i < enum_type->num_elems; ++i) {
      int64_t value = enum_type->values ? enum_type->values[i] : static_cast<int64_t>(i);
      if (value == integer) return enum_type->names[i];
    }
  }
  return std::to_string(integer);
}

std::string show_string(const flatbuffers::String* text) {
  if (!text) return "absent";
  constexpr size_t kShown = 48;  // two values side by side on one line
  return in_quotes(text->string_view(), kShown);
}

const uint8_t* follow(const uint8_t* at) { return at + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(at); }

class PlanDiff {
 public:
  std::optional<std::string> tables(const Table* a, const Table* b, const TypeTable* type, const std::string& path,
                                    bool plan_order) {
    for (size_t field : field_order(type, plan_order)) {
      if (auto found = field_difference(a, b, type, field, path)) return found;
    }
    return std::nullopt;
  }

 private:
  static std::vector<size_t> field_order(const TypeTable* type, bool plan_order) {
    std::vector<size_t> order;
    if (plan_order && type->names) {
      for (std::string_view wanted : kPlanFieldOrder) {
        for (size_t i = 0; i < type->num_elems; ++i) {
          if (wanted == type->names[i]) order.push_back(i);
        }
      }
    }
    for (size_t i = 0; i < type->num_elems; ++i) {
      if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
    }
    return order;
  }

  static std::string join(const std::string& path, const char* name) {
    std::string field = name ? name : "?";
    return path.empty() ? field : path + "." + field;
  }

  std::optional<std::string> field_difference(const Table* a, const Table* b, const TypeTable* type, size_t field,
                                              const std::string& path) {
    flatbuffers::TypeCode code = type->type_codes[field];
    auto element = static_cast<ElementaryType>(code.base_type);
    const TypeTable* ref = code.sequence_ref >= 0 ? type->type_refs[code.sequence_ref]() : nullptr;
    auto voffset = flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(field));
    const uint8_t* at_a = a->GetAddressOf(voffset);
    const uint8_t* at_b = b->GetAddressOf(voffset);
    std::string where = join(path, type->names ? type->names[field] : nullptr);

    if (code.is_repeating) return vector_difference(at_a, at_b, element, ref, where);
    if (is_scalar(element)) return scalar_difference(element, at_a, at_b, ref, where);
    if (!at_a || !at_b) {
      if (!at_a && !at_b) return std::nullopt;
      return where + ": " + (at_a ? "present" : "absent") + " vs " + (at_b ? "present" : "absent");
    }
    if (element == flatbuffers::ET_SEQUENCE && ref && ref->st == flatbuffers::ST_UNION) {
      // The union's type tag is the field before; a differing tag was reported there.
      auto tag_offset = flatbuffers::FieldIndexToOffset(static_cast<flatbuffers::voffset_t>(field - 1));
      uint8_t tag = a->GetField<uint8_t>(tag_offset, 0);
      return union_difference(follow(at_a), follow(at_b), tag, ref, where);
    }
    return value_difference(element, at_a, at_b, ref, where);
  }

  static std::optional<std::string> scalar_difference(ElementaryType element, const uint8_t* a, const uint8_t* b,
                                                      const TypeTable* enum_type, const std::string& where) {
    uint8_t zero[8] = {};
    size_t size = scalar_size(element);
    if (std::memcmp(a ? a : zero, b ? b : zero, size) == 0) return std::nullopt;
    return where + ": " + show_scalar(element, a, enum_type) + " vs " + show_scalar(element, b, enum_type);
  }

  std::optional<std::string> union_difference(const uint8_t* a, const uint8_t* b, uint8_t tag, const TypeTable* type,
                                              const std::string& where) {
    if (tag == 0 || tag >= type->num_elems) return std::nullopt;
    flatbuffers::TypeCode member = type->type_codes[tag];
    if (member.base_type != flatbuffers::ET_SEQUENCE || member.sequence_ref < 0) return std::nullopt;
    const TypeTable* member_type = type->type_refs[member.sequence_ref]();
    std::string name = type->names ? type->names[tag] : "?";
    return tables(reinterpret_cast<const Table*>(a), reinterpret_cast<const Table*>(b), member_type,
                  where + "(" + name + ")", false);
  }

  // One value stored at `a` and `b`: an offset to a string or table, or an
  // inline struct.
  std::optional<std::string> value_difference(ElementaryType element, const uint8_t* a, const uint8_t* b,
                                              const TypeTable* ref, const std::string& where) {
    if (is_scalar(element)) return scalar_difference(element, a, b, ref, where);
    if (element == flatbuffers::ET_STRING) {
      auto* text_a = reinterpret_cast<const flatbuffers::String*>(follow(a));
      auto* text_b = reinterpret_cast<const flatbuffers::String*>(follow(b));
      if (text_a->string_view() == text_b->string_view()) return std::nullopt;
      return where + ": " + show_string(text_a) + " vs " + show_string(text_b);
    }
    if (element != flatbuffers::ET_SEQUENCE || !ref) return std::nullopt;
    if (ref->st == flatbuffers::ST_TABLE) {
      return tables(reinterpret_cast<const Table*>(follow(a)), reinterpret_cast<const Table*>(follow(b)), ref, where,
                    false);
    }
    if (ref->st == flatbuffers::ST_STRUCT) {
      auto size = static_cast<size_t>(ref->values[ref->num_elems]);
      if (std::memcmp(a, b, size) == 0) return std::nullopt;
      return where + ": differs";
    }
    return std::nullopt;
  }

  static size_t element_size(ElementaryType element, const TypeTable* ref) {
    if (is_scalar(element)) return scalar_size(element);
    if (element == flatbuffers::ET_SEQUENCE && ref && ref->st == flatbuffers::ST_STRUCT) {
      return static_cast<size_t>(ref->values[ref->num_elems]);
    }
    return sizeof(flatbuffers::uoffset_t);
  }

  static std::string show_short_vector(const flatbuffers::Vector<uint8_t>* vector, ElementaryType element,
                                       const TypeTable* ref) {
    std::string out = "[";
    size_t count = vector ? vector->size() : 0;
    for (size_t i = 0; i < count; ++i) {
      if (i) out += ", ";
      out += show_scalar(element, vector->Data() + i * scalar_size(element), ref);
    }
    return out + "]";
  }

  std::optional<std::string> vector_difference(const uint8_t* at_a, const uint8_t* at_b, ElementaryType element,
                                               const TypeTable* ref, const std::string& where) {
    // Absent and empty mean the same: no entries.
    auto* vector_a = at_a ? reinterpret_cast<const flatbuffers::Vector<uint8_t>*>(follow(at_a)) : nullptr;
    auto* vector_b = at_b ? reinterpret_cast<const flatbuffers::Vector<uint8_t>*>(follow(at_b)) : nullptr;
    size_t count_a = vector_a ? vector_a->size() : 0;
    size_t count_b = vector_b ? vector_b->size() : 0;
    if (count_a != count_b) {
      constexpr size_t kShownEntries = 8;
      if (is_scalar(element) && count_a <= kShownEntries && count_b <= kShownEntries) {
        return where + ": " + show_short_vector(vector_a, element, ref) + " vs " +
               show_short_vector(vector_b, element, ref);
      }
      return where + ": " + std::to_string(count_a) + " entries vs " + std::to_string(count_b);
    }
    size_t stride = element_size(element, ref);
    for (size_t i = 0; i < count_a; ++i) {
      const uint8_t* item_a = vector_a->Data() + i * stride;
      const uint8_t* item_b = vector_b->Data() + i * stride;
      if (auto found = value_difference(element, item_a, item_b, ref, where + "[" + std::to_string(i) + "]")) {
        return found;
      }
    }
    return std::nullopt;
  }
};

// The plan as it would be with every delegate's processed data taken out
// (compared separately), and the CUDA delegates' build-only specs dropped.
flatbuffers::DetachedBuffer normalized(const fb::ExecutionPlan& plan) {
  std::unique_ptr<fb::ExecutionPlanT> object(plan.UnPack());
  for (auto& delegate : object->delegates) {
    delegate->processed.reset();
    if (delegate->id != kCudaBackendId) continue;
    auto& specs = delegate->compile_specs;
    specs.erase(std::remove_if(specs.begin(), specs.end(),
                               [](const auto& spec) {
                                 return std::find(kBuildOnlySpecs.begin(), kBuildOnlySpecs.end(), spec->key) !=
                                        kBuildOnlySpecs.end();
                               }),
                specs.end());
  }
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::ExecutionPlan::Pack(builder, object.get()));
  return builder.Release();
}

}  // namespace

std::optional<std::string> plan_difference(const fb::ExecutionPlan& a, const fb::ExecutionPlan& b) {
  flatbuffers::DetachedBuffer packed_a = normalized(a);
  flatbuffers::DetachedBuffer packed_b = normalized(b);
  auto* table_a = flatbuffers::GetRoot<Table>(packed_a.data());
  auto* table_b = flatbuffers::GetRoot<Table>(packed_b.data());
  return PlanDiff().tables(table_a, table_b, fb::ExecutionPlanTypeTable(), "", true);
}

}  // namespace ptb::detail
