// Opening a .bpte (BundledProgram, identifier "BP08").
#include "ptbundle/formats/bpte.h"
#include "ptbundle/fb/bundled_program_generated.h"
#include "formats/wire.h"

namespace ptb {
namespace {

constexpr std::string_view kBundleIdentifier = "BP08";


Result<BundledTensor> read_tensor(const fb::bpte::Tensor& tensor, const std::string& context) {
  BundledTensor out;
  out.scalar_type = static_cast<int8_t>(tensor.scalar_type());
  if (tensor.sizes()) out.sizes.assign(tensor.sizes()->begin(), tensor.sizes()->end());
  if (tensor.dim_order()) out.dim_order.assign(tensor.dim_order()->begin(), tensor.dim_order()->end());
  if (tensor.data()) out.data = Bytes(tensor.data()->data(), tensor.data()->size());
  auto element = scalar_type_size(out.scalar_type);
  if (!element || *element == 0) {
    return invalid(context + ": scalar type " + std::to_string(out.scalar_type) + " is unknown; expected an ExecuTorch ScalarType");
  }
  for (int64_t size : out.sizes) {
    if (size < 0) return invalid(context + ": size " + std::to_string(size) + " is negative; expected >= 0");
  }
  const std::optional<uint64_t> bytes = tensor_bytes(out.sizes, out.scalar_type);
  if (!bytes) return invalid(context + ": shape describes more than 2^64 bytes; expected a tensor that fits");
  const uint64_t expected = *bytes;
  if (expected != out.data.size()) {
    return invalid(context + ": tensor of " + scalar_type_name(out.scalar_type) + " holds " + std::to_string(out.data.size()) +
                   " bytes; expected " + std::to_string(expected) + " for its shape");
  }
  return out;
}

Result<std::vector<BundledValue>> read_values(
    const flatbuffers::Vector<flatbuffers::Offset<fb::bpte::Value>>* values, const std::string& context) {
  std::vector<BundledValue> out;
  if (!values) return out;
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) {
    const fb::bpte::Value* value = values->Get(i);
    std::string here = context + "[" + std::to_string(i) + "]";
    BundledValue v;
    // The verifier accepts a union whose type is set but whose table is absent.
    if (!value->val()) return invalid(here + ": value has no contents; expected a tensor, int, bool or double");
    switch (value->val_type()) {
      case fb::bpte::ValueUnion::Tensor: {
        v.kind = "tensor";
        PTB_TRY(v.tensor, read_tensor(*value->val_as_Tensor(), here));
        break;
      }
      case fb::bpte::ValueUnion::Int:
        v.kind = "int";
        v.int_value = value->val_as_Int()->int_val();
        break;
      case fb::bpte::ValueUnion::Bool:
        v.kind = "bool";
        v.bool_value = value->val_as_Bool()->bool_val();
        break;
      case fb::bpte::ValueUnion::Double:
        v.kind = "double";
        v.double_value = value->val_as_Double()->double_val();
        break;
      default:
        return invalid(here + ": value kind " + std::to_string(static_cast<int>(value->val_type())) +
                       " is unknown; expected a tensor, int, bool or double");
    }
    out.push_back(std::move(v));
  }
  return out;
}

bool has_method(const PteFile& program, const std::string& name) {
  const auto* plans = program.program().execution_plan();
  if (!plans) return false;
  for (const fb::ExecutionPlan* plan : *plans) {
    if (plan->name()->str() == name) return true;
  }
  return false;
}

}  // namespace

Result<BpteFile> BpteFile::open(const std::string& path) {
  PTB_TRY(auto mapped, MappedFile::open(path));
  return parse(std::move(mapped));
}

Result<BpteFile> BpteFile::parse(MappedFile file) {
  BpteFile bpte;
  const std::string path = file.path();
  // The mapping and a private copy of the whole file (one flatbuffer), owned
  // together: whoever holds file() (the program inside, and through it the
  // test cases' tensor bytes, which point into the copy) keeps both.
  struct Held {
    MappedFile file;
    std::vector<uint8_t> copy;
  };
  auto held = std::make_shared<Held>(Held{std::move(file), {}});
  bpte.file_ = std::shared_ptr<const MappedFile>(held, &held->file);
  Bytes data = bpte.file_->bytes();
  if (data.size() < 8) {
    return invalid(path + ": " + std::to_string(data.size()) +
                   " bytes is too short for a bundled program; expected at least 8 (root offset and file identifier 'BP08')");
  }
  if (!detail::has_text_at(data, 4, kBundleIdentifier)) {
    return invalid(path + ": file identifier at offset 4 is '" + detail::show_bytes(data.subspan(4, 4)) +
                   "'; expected 'BP08' (an ExecuTorch bundled program)");
  }
  if (!detail::verifiable_size(data.size())) {
    return invalid(path + ": " + std::to_string(data.size()) + " bytes is too large for a bundled program; expected less than 2 GiB");
  }
  // The whole file is one flatbuffer: verified and read from a copy no other
  // process can change (pte.h says why).
  held->copy.assign(data.begin(), data.end());
  const std::vector<uint8_t>& copy = held->copy;
  flatbuffers::Verifier verifier(copy.data(), copy.size(), detail::verifier_options(copy.size()));
  if (!fb::bpte::VerifyBundledProgramBuffer(verifier)) {
    return invalid(path + ": flatbuffer fails FlatBuffers verification; expected a valid BundledProgram");
  }
  const fb::bpte::BundledProgram* root = fb::bpte::GetBundledProgram(copy.data());
  bpte.version_ = root->version();
  if (!root->program() || root->program()->size() == 0) {
    return invalid(path + ": holds no program; expected the bytes of a .pte in its program field");
  }
  // The program, at the place the copy says, read from the file as a lone
  // program is: PteFile copies its own flatbuffer, and its segments are
  // data that hashing and loading read in the file.
  const size_t program_offset = static_cast<size_t>(root->program()->data() - copy.data());
  Bytes program = data.subspan(program_offset, root->program()->size());
  PTB_TRY(bpte.program_, PteFile::parse(bpte.file_, program, path + ": program"));

  if (const auto* suites = root->method_test_suites()) {
    for (flatbuffers::uoffset_t s = 0; s < suites->size(); ++s) {
      const fb::bpte::BundledMethodTestSuite* suite = suites->Get(s);
      if (!suite->method_name()) return invalid(path + ": test suite " + std::to_string(s) + " has no method name; expected one");
      BundledTestSuite out;
      out.method_name = suite->method_name()->str();
      std::string context = path + ": test suite '" + detail::show_text(out.method_name) + "'";
      if (!has_method(bpte.program_, out.method_name)) {
        return invalid(context + " names a method the program does not have");
      }
      if (const auto* cases = suite->test_cases()) {
        for (flatbuffers::uoffset_t c = 0; c < cases->size(); ++c) {
          std::string here = context + " case " + std::to_string(c);
          BundledTestCase test;
          PTB_TRY(test.inputs, read_values(cases->Get(c)->inputs(), here + " input"));
          PTB_TRY(test.expected_outputs, read_values(cases->Get(c)->expected_outputs(), here + " expected output"));
          out.test_cases.push_back(std::move(test));
        }
      }
      bpte.suites_.push_back(std::move(out));
    }
  }
  return bpte;
}

}  // namespace ptb
