// The .pte reader against programs written by ExecuTorch itself: the small
// portable programs in executorch/, and every CUDA export compared field by
// field with ExecuTorch's own reading of it (dump.json).
#include "fixture_dump.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/fb/program_generated.h"

using namespace ptb;
using namespace ptb::test;
using nlohmann::json;

namespace {

PteFile open_pte(const fs::path& path) {
  auto pte = PteFile::open(path.string());
  if (!pte.ok()) FAIL(pte.error().message);
  return std::move(pte).value();
}

std::vector<std::string> method_names(const std::vector<MethodInfo>& methods) {
  std::vector<std::string> names;
  for (const auto& m : methods) names.push_back(m.name);
  return names;
}

}  // namespace

TEST_CASE("pte: add.pte, no extended header, one portable add") {
  PTB_REQUIRE_FIXTURES();
  PteFile pte = open_pte(fixture("executorch/add.pte"));
  CHECK(pte.bytes().size() == 728);
  CHECK_FALSE(pte.extended_header().has_value());
  CHECK(pte.flatbuffer_size() == 728);
  // ExecuTorch lists one empty constant segment even without a header.
  REQUIRE(pte.segments().size() == 1);
  CHECK(pte.segments()[0].size == 0);
  CHECK(pte.named_data().empty());
  auto methods = describe_methods(pte);
  REQUIRE(methods.size() == 1);
  const MethodInfo& forward = methods[0];
  CHECK(forward.name == "forward");
  CHECK(forward.operators == std::vector<std::string>{"aten::add.out"});
  CHECK(forward.delegates.empty());
  CHECK(forward.num_values == 4);
  CHECK(forward.num_instructions == 1);
  CHECK(forward.non_const_buffer_sizes == std::vector<int64_t>{0, 48});
  REQUIRE(forward.inputs.size() == 2);
  REQUIRE(forward.outputs.size() == 1);
  for (const auto& value : {forward.inputs[0], forward.inputs[1], forward.outputs[0]}) {
    CHECK(value.kind == "tensor");
    REQUIRE(value.tensor.has_value());
    CHECK(std::string(scalar_type_name(value.tensor->scalar_type)) == "float32");
    CHECK(value.tensor->sizes == std::vector<int64_t>{1});
    CHECK(value.tensor->dynamism == "static");
  }
}

TEST_CASE("pte: add_extended_header.pte reads the eh00 header") {
  PTB_REQUIRE_FIXTURES();
  PteFile pte = open_pte(fixture("executorch/add_extended_header.pte"));
  REQUIRE(pte.extended_header().has_value());
  const auto& header = *pte.extended_header();
  CHECK(header.length == 32);
  CHECK(header.program_size == 1040);
  CHECK(header.segment_base_offset == 1152);
  CHECK(header.segment_data_size == 4);
  CHECK(pte.flatbuffer_size() == 1040);
  REQUIRE(pte.segments().size() == 1);
  CHECK(pte.segments()[0].offset == 0);
  CHECK(pte.segments()[0].size == 4);
  CHECK(pte.segments()[0].file_offset == 1152);
  CHECK(pte.segment_bytes(0).size() == 4);
  const auto* constants = pte.program().constant_segment();
  REQUIRE(constants != nullptr);
  CHECK(constants->offsets()->size() == 2);
  auto methods = describe_methods(pte);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].operators == std::vector<std::string>{"aten::add.out"});
  REQUIRE(methods[0].inputs.size() == 1);
  CHECK(methods[0].inputs[0].tensor->sizes == std::vector<int64_t>{3});
  CHECK(methods[0].outputs[0].tensor->sizes == std::vector<int64_t>{3});
}

TEST_CASE("pte: linear_no_constant_segment.pte keeps constants in constant_buffer") {
  PTB_REQUIRE_FIXTURES();
  PteFile pte = open_pte(fixture("executorch/linear_no_constant_segment.pte"));
  CHECK_FALSE(pte.extended_header().has_value());
  CHECK(pte.segments().empty());
  const auto* buffers = pte.program().constant_buffer();
  REQUIRE(buffers != nullptr);
  REQUIRE(buffers->size() == 3);
  CHECK(buffers->Get(0)->storage()->size() == 0);
  CHECK(buffers->Get(1)->storage()->size() == 16);
  CHECK(buffers->Get(2)->storage()->size() == 16);
  auto methods = describe_methods(pte);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].operators == std::vector<std::string>{"aten::mul.out", "aten::add.out"});
  CHECK(methods[0].num_values == 6);
  CHECK(methods[0].num_instructions == 2);
  REQUIRE(methods[0].inputs.size() == 1);
  CHECK(methods[0].inputs[0].tensor->sizes == std::vector<int64_t>{2, 2});
  CHECK(methods[0].outputs[0].tensor->sizes == std::vector<int64_t>{2, 2});
}

TEST_CASE("pte: softmax.pte") {
  PTB_REQUIRE_FIXTURES();
  PteFile pte = open_pte(fixture("executorch/softmax.pte"));
  auto methods = describe_methods(pte);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].operators == std::vector<std::string>{"aten::_softmax.out"});
  CHECK(methods[0].inputs[0].tensor->sizes == std::vector<int64_t>{2, 4096});
  CHECK(methods[0].outputs[0].tensor->sizes == std::vector<int64_t>{2, 4096});
  CHECK(methods[0].non_const_buffer_sizes == std::vector<int64_t>{0, 65536});
}

TEST_CASE("pte: the Cadence programs keep their weights in one constant segment") {
  PTB_REQUIRE_FIXTURES();
  struct Expected {
    const char* file;
    uint64_t segment_size;
    std::vector<int64_t> input;
    std::vector<int64_t> output;
  };
  for (const auto& expected : {Expected{"executorch/cadence_conv2d.pte", 9664, {1, 3, 224, 224}, {1, 64, 112, 112}},
                               Expected{"executorch/cadence_conv2d_36k.pte", 33792, {1, 128, 8, 8}, {1, 256, 4, 4}}}) {
    CAPTURE(expected.file);
    PteFile pte = open_pte(fixture(expected.file));
    REQUIRE(pte.extended_header().has_value());
    CHECK(pte.extended_header()->program_size == 2416);
    CHECK(pte.extended_header()->segment_base_offset == 2432);
    CHECK(pte.extended_header()->segment_data_size == expected.segment_size);
    REQUIRE(pte.segments().size() == 1);
    CHECK(pte.segments()[0].size == expected.segment_size);
    CHECK(pte.segments()[0].file_offset == 2432);
    auto methods = describe_methods(pte);
    REQUIRE(method_names(methods) == std::vector<std::string>{"forward"});
    CHECK(methods[0].operators == std::vector<std::string>{"cadence::quantize_per_tensor.out",
                                                           "cadence::quantized_conv2d_nchw.per_tensor_out",
                                                           "cadence::dequantize_per_tensor.out"});
    CHECK(methods[0].num_values == 33);
    CHECK(methods[0].delegates.empty());
    CHECK(methods[0].inputs[0].tensor->sizes == expected.input);
    CHECK(methods[0].outputs[0].tensor->sizes == expected.output);
  }
}

// ---- CUDA exports against dump.json ----

namespace {

void compare_value(const fb::EValue& value, const json& expected) {
  REQUIRE(expected["type"] == "Tensor");
  REQUIRE(value.val_type() == fb::KernelTypes::Tensor);
  const fb::Tensor& tensor = *value.val_as_Tensor();
  CHECK(fb::EnumNameScalarType(tensor.scalar_type()) == expected["scalar_type"].get<std::string>());
  CHECK(std::vector<int32_t>(tensor.sizes()->begin(), tensor.sizes()->end()) == expected["sizes"].get<std::vector<int32_t>>());
  CHECK(std::vector<int>(tensor.dim_order()->begin(), tensor.dim_order()->end()) ==
        expected["dim_order"].get<std::vector<int>>());
  CHECK(tensor.data_buffer_idx() == expected["data_buffer_idx"].get<uint32_t>());
  CHECK(fb::EnumNameTensorShapeDynamism(tensor.shape_dynamism()) == expected["shape_dynamism"].get<std::string>());
  const auto* allocation = tensor.allocation_info();
  REQUIRE(allocation != nullptr);
  CHECK(allocation->memory_id() == expected["allocation"]["memory_id"].get<uint32_t>());
  uint64_t offset = (uint64_t{allocation->memory_offset_high()} << 32) | allocation->memory_offset_low();
  CHECK(offset == expected["allocation"]["offset"].get<uint64_t>());
  const auto* extra = tensor.extra_tensor_info();
  if (!expected.contains("extra_tensor_info")) {
    CHECK(extra == nullptr);
    return;
  }
  REQUIRE(extra != nullptr);
  const json& e = expected["extra_tensor_info"];
  CHECK(extra->mutable_data_segments_idx() == e["mutable_data_segments_idx"].get<uint64_t>());
  CHECK((extra->fully_qualified_name() == nullptr) == e["fully_qualified_name"].is_null());
  CHECK(fb::EnumNameTensorDataLocation(extra->location()) == e["location"].get<std::string>());
  CHECK(fb::EnumNameDeviceType(extra->device_type()) == e["device_type"].get<std::string>());
  CHECK(extra->device_index() == e["device_index"].get<int>());
}

void compare_chain(const fb::Chain& chain, const json& expected) {
  CHECK(std::vector<int32_t>(chain.inputs()->begin(), chain.inputs()->end()) == expected["inputs"].get<std::vector<int32_t>>());
  CHECK(std::vector<int32_t>(chain.outputs()->begin(), chain.outputs()->end()) == expected["outputs"].get<std::vector<int32_t>>());
  REQUIRE(chain.instructions()->size() == expected["instructions"].size());
  for (size_t i = 0; i < expected["instructions"].size(); ++i) {
    const json& e = expected["instructions"][i];
    const fb::Instruction& instruction = *chain.instructions()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (e.contains("KernelCall")) {
      REQUIRE(instruction.instr_args_type() == fb::InstructionArguments::KernelCall);
      const auto* call = instruction.instr_args_as_KernelCall();
      CHECK(call->op_index() == e["KernelCall"]["op_index"].get<int>());
      CHECK(std::vector<int32_t>(call->args()->begin(), call->args()->end()) == e["KernelCall"]["args"].get<std::vector<int32_t>>());
    } else {
      REQUIRE(e.contains("DelegateCall"));
      REQUIRE(instruction.instr_args_type() == fb::InstructionArguments::DelegateCall);
      const auto* call = instruction.instr_args_as_DelegateCall();
      CHECK(call->delegate_index() == e["DelegateCall"]["delegate_index"].get<int>());
      CHECK(std::vector<int32_t>(call->args()->begin(), call->args()->end()) ==
            e["DelegateCall"]["args"].get<std::vector<int32_t>>());
    }
  }
}

void compare_plan(const PteFile& pte, const MethodInfo& method, size_t plan_index, const json& expected) {
  const fb::ExecutionPlan& plan = *pte.program().execution_plan()->Get(static_cast<flatbuffers::uoffset_t>(plan_index));
  CHECK(method.name == expected["name"].get<std::string>());
  CHECK(method.num_values == expected["num_values"].get<uint64_t>());
  REQUIRE(plan.values()->size() == expected["values"].size());
  for (size_t v = 0; v < expected["values"].size(); ++v) {
    CAPTURE(v);
    compare_value(*plan.values()->Get(static_cast<flatbuffers::uoffset_t>(v)), expected["values"][v]);
  }
  CHECK(std::vector<int32_t>(plan.inputs()->begin(), plan.inputs()->end()) == expected["inputs"].get<std::vector<int32_t>>());
  CHECK(std::vector<int32_t>(plan.outputs()->begin(), plan.outputs()->end()) == expected["outputs"].get<std::vector<int32_t>>());
  REQUIRE(method.inputs.size() == expected["inputs"].size());
  REQUIRE(method.outputs.size() == expected["outputs"].size());
  std::vector<std::string> operators;
  for (const json& op : expected["operators"]) {
    operators.push_back(op["name"].get<std::string>() + "." + op["overload"].get<std::string>());
  }
  CHECK(method.operators == operators);
  REQUIRE(plan.chains()->size() == expected["chains"].size());
  for (size_t c = 0; c < expected["chains"].size(); ++c) compare_chain(*plan.chains()->Get(static_cast<flatbuffers::uoffset_t>(c)), expected["chains"][c]);
  CHECK(method.non_const_buffer_sizes == expected["non_const_buffer_sizes"].get<std::vector<int64_t>>());
  REQUIRE(plan.non_const_buffer_device()->size() == expected["non_const_buffer_device"].size());
  for (size_t i = 0; i < expected["non_const_buffer_device"].size(); ++i) {
    const auto* device = plan.non_const_buffer_device()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const json& e = expected["non_const_buffer_device"][i];
    CHECK(device->buffer_idx() == e["buffer_idx"].get<int>());
    CHECK(fb::EnumNameDeviceType(device->device_type()) == e["device_type"].get<std::string>());
    CHECK(device->device_index() == e["device_index"].get<int>());
  }
  CHECK(plan.container_meta_type()->encoded_inp_str()->str() == expected["container_meta_type"]["encoded_inp_str"].get<std::string>());
  CHECK(plan.container_meta_type()->encoded_out_str()->str() == expected["container_meta_type"]["encoded_out_str"].get<std::string>());

  REQUIRE(method.delegates.size() == expected["delegates"].size());
  for (size_t d = 0; d < method.delegates.size(); ++d) {
    const DelegateInfo& delegate = method.delegates[d];
    const json& e = expected["delegates"][d];
    CHECK(delegate.id == e["id"].get<std::string>());
    CHECK(delegate.location == (e["processed"]["location"] == "SEGMENT" ? "segment" : "inline"));
    CHECK(delegate.index == e["processed"]["index"].get<uint32_t>());
    CHECK(delegate.payload_size == e["payload_size"].get<uint64_t>());
    CHECK(sha256_hex(pte.delegate_payload(plan_index, d)) == e["payload_sha256"].get<std::string>());
    // Compile specs in file order, with their values.
    REQUIRE(delegate.compile_specs.size() == e["compile_spec_order"].size());
    for (size_t s = 0; s < delegate.compile_specs.size(); ++s) {
      const auto& spec = delegate.compile_specs[s];
      std::string key = e["compile_spec_order"][s].get<std::string>();
      CHECK(spec.key == key);
      CHECK(spec.is_text());
      CHECK(std::string(spec.value.begin(), spec.value.end()) == e["compile_specs"][key].get<std::string>());
    }
  }
}

}  // namespace

TEST_CASE("pte: every CUDA export matches ExecuTorch's reading in dump.json") {
  PTB_REQUIRE_FIXTURES();
  auto dirs = cuda_fixture_dirs();
  REQUIRE(dirs.size() == 8);
  for (const auto& dir : dirs) {
    CAPTURE(dir.string());
    json dump = read_json(dir / "dump.json");
    const json& expected = dump["pte"];
    PteFile pte = open_pte(fixture("cuda") / expected["file"].get<std::string>());
    CHECK(pte.bytes().size() == expected["file_size"].get<uint64_t>());
    CHECK(sha256_hex(pte.bytes()) == expected["sha256"].get<std::string>());
    CHECK(std::string(reinterpret_cast<const char*>(pte.bytes().data()) + 4, 4) == expected["file_identifier"].get<std::string>());

    REQUIRE(pte.extended_header().has_value());
    const json& header = expected["extended_header"];
    CHECK(header["magic"] == "eh00");
    CHECK(pte.extended_header()->length == header["length"].get<uint32_t>());
    CHECK(pte.extended_header()->program_size == header["program_size"].get<uint64_t>());
    CHECK(pte.extended_header()->segment_base_offset == header["segment_base_offset"].get<uint64_t>());
    CHECK(pte.extended_header()->segment_data_size == header["segment_data_size"].get<uint64_t>());

    const json& program = expected["program"];
    CHECK(pte.program().version() == program["version"].get<uint32_t>());
    auto methods = describe_methods(pte);
    REQUIRE(methods.size() == program["num_execution_plans"].get<size_t>());
    for (size_t p = 0; p < methods.size(); ++p) compare_plan(pte, methods[p], p, program["execution_plans"][p]);

    size_t inline_count = pte.program().backend_delegate_data() ? pte.program().backend_delegate_data()->size() : 0;
    CHECK(inline_count == program["num_backend_delegate_data_inline"].get<size_t>());
    const auto* constants = pte.program().constant_segment();
    REQUIRE(constants != nullptr);
    CHECK(constants->segment_index() == program["constant_segment"]["segment_index"].get<uint32_t>());
    CHECK(std::vector<uint64_t>(constants->offsets()->begin(), constants->offsets()->end()) ==
          program["constant_segment"]["offsets"].get<std::vector<uint64_t>>());
    CHECK(program["mutable_data_segments"].is_null());
    CHECK(pte.program().mutable_data_segments() == nullptr);

    REQUIRE(pte.segments().size() == program["segments"].size());
    for (size_t s = 0; s < pte.segments().size(); ++s) {
      const json& e = program["segments"][s];
      CHECK(pte.segments()[s].offset == e["offset"].get<uint64_t>());
      CHECK(pte.segments()[s].size == e["size"].get<uint64_t>());
      CHECK(pte.segments()[s].file_offset == e["file_offset"].get<uint64_t>());
      CHECK(sha256_hex(pte.segment_bytes(s)) == e["sha256"].get<std::string>());
    }
    REQUIRE(pte.named_data().size() == program["named_data"].size());
    for (size_t n = 0; n < pte.named_data().size(); ++n) {
      const json& e = program["named_data"][n];
      const PteNamedData& entry = pte.named_data()[n];
      CHECK(entry.key == e["key"].get<std::string>());
      CHECK(entry.segment_index == e["segment_index"].get<uint32_t>());
      CHECK(entry.size == e["size"].get<uint64_t>());
      CHECK(sha256_hex(pte.named_data_bytes(entry)) == e["sha256"].get<std::string>());
      CHECK(pte.find_named_data(entry.key) == &entry);
    }
  }
}

TEST_CASE("pte: scalar type names follow PyTorch's dtype names") {
  CHECK(std::string(scalar_type_name(6)) == "float32");
  CHECK(std::string(scalar_type_name(15)) == "bfloat16");
  CHECK(std::string(scalar_type_name(4)) == "int64");
  CHECK(std::string(scalar_type_name(-3)) == "unknown");
  CHECK(std::string(scalar_type_name(99)) == "unknown");
  CHECK(scalar_type_from_name("float16") == std::optional<int8_t>(5));
  CHECK_FALSE(scalar_type_from_name("FLOAT").has_value());
  CHECK(scalar_type_size(15) == std::optional<uint64_t>(2));
  CHECK(scalar_type_size(7) == std::optional<uint64_t>(8));
  CHECK_FALSE(scalar_type_size(40).has_value());
}
