// The .bpte reader against ExecuTorch's own BundledProgram fixture.
#include <cstring>

#include "fixture_dump.h"
#include "ptbundle/formats/bpte.h"

using namespace ptb;
using namespace ptb::test;

namespace {

std::vector<int32_t> int32_values(Bytes data) {
  std::vector<int32_t> values(data.size() / 4);
  std::memcpy(values.data(), data.data(), values.size() * 4);
  return values;
}

}  // namespace

TEST_CASE("bpte: bundled_program.bpte holds a program and ten test cases for forward") {
  PTB_REQUIRE_FIXTURES();
  auto bpte = BpteFile::open(fixture("executorch/bundled_program.bpte").string());
  REQUIRE_MESSAGE(bpte.ok(), error_of(bpte));
  CHECK(bpte->version() == 2);
  CHECK(bpte->file().size() == 4608);

  const PteFile& program = bpte->program();
  CHECK(program.bytes().size() == 1696);
  CHECK(program.base_offset() > 0);
  CHECK(program.base_offset() % 32 == 0);
  CHECK(program.name().find("bundled_program.bpte: program") != std::string::npos);
  // The inner program carries the short (24-byte) extended header.
  REQUIRE(program.extended_header().has_value());
  CHECK(program.extended_header()->length == 24);
  CHECK(program.extended_header()->program_size == 1584);
  CHECK(program.extended_header()->segment_base_offset == 1664);
  CHECK(program.extended_header()->segment_data_size == 0);
  REQUIRE(program.segments().size() == 1);
  CHECK(program.segments()[0].size == 32);
  CHECK(program.segments()[0].file_offset == 1664);
  // Constants 3 and 2, as int32 [2, 2] each.
  auto constants = int32_values(program.segment_bytes(0));
  CHECK(constants == std::vector<int32_t>{3, 3, 3, 3, 2, 2, 2, 2});

  auto methods = describe_methods(program);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].name == "forward");
  CHECK(methods[0].operators == std::vector<std::string>{"aten::mul.out", "aten::add.out"});
  CHECK(methods[0].num_values == 9);
  CHECK(methods[0].num_instructions == 3);

  REQUIRE(bpte->test_suites().size() == 1);
  const BundledTestSuite& suite = bpte->test_suites()[0];
  CHECK(suite.method_name == "forward");
  REQUIRE(suite.test_cases.size() == 10);
  for (const auto& test : suite.test_cases) {
    REQUIRE(test.inputs.size() == 2);
    REQUIRE(test.expected_outputs.size() == 1);
    for (const auto& value : {test.inputs[0], test.inputs[1], test.expected_outputs[0]}) {
      CHECK(value.kind == "tensor");
      REQUIRE(value.tensor.has_value());
      CHECK(std::string(scalar_type_name(value.tensor->scalar_type)) == "int32");
      CHECK(value.tensor->sizes == std::vector<int64_t>{2, 2});
      CHECK(value.tensor->dim_order == std::vector<uint8_t>{0, 1});
      CHECK(value.tensor->data.size() == 16);
    }
    CHECK(int32_values(test.inputs[0].tensor->data) == std::vector<int32_t>{0, 0, 0, 0});
    CHECK(int32_values(test.expected_outputs[0].tensor->data) == std::vector<int32_t>{2, 2, 2, 2});
  }
}

TEST_CASE("bpte: a .pte is not a bundled program") {
  PTB_REQUIRE_FIXTURES();
  auto path = fixture("executorch/add.pte").string();
  auto bpte = BpteFile::open(path);
  REQUIRE_FALSE(bpte.ok());
  CHECK(bpte.error().kind == ErrorKind::Invalid);
  CHECK(bpte.error().message == path + ": file identifier at offset 4 is 'ET12'; expected 'BP08' (an ExecuTorch bundled program)");
}
