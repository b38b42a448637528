// The .ptd reader against every data file of the CUDA exports, compared with
// ExecuTorch's own reading of it (dump.json).
#include "fixture_dump.h"
#include "ptbundle/formats/ptd.h"

using namespace ptb;
using namespace ptb::test;
using nlohmann::json;

TEST_CASE("ptd: every CUDA data file matches ExecuTorch's reading in dump.json") {
  PTB_REQUIRE_FIXTURES();
  auto dirs = cuda_fixture_dirs();
  REQUIRE(dirs.size() == 8);
  for (const auto& dir : dirs) {
    json dump = read_json(dir / "dump.json");
    const json& expected = dump["ptd"];
    auto path = fixture("cuda") / expected["file"].get<std::string>();
    CAPTURE(path.string());
    auto ptd = PtdFile::open(path.string());
    REQUIRE_MESSAGE(ptd.ok(), error_of(ptd));
    CHECK(ptd->path() == path.string());
    CHECK(ptd->file().size() == expected["file_size"].get<uint64_t>());
    CHECK(sha256_hex(ptd->file().bytes()) == expected["sha256"].get<std::string>());
    CHECK(std::string(reinterpret_cast<const char*>(ptd->file().bytes().data()) + 4, 4) ==
          expected["file_identifier"].get<std::string>());
    const json& header = expected["header"];
    CHECK(header["magic"] == "FH01");
    CHECK(ptd->header().length == header["length"].get<uint32_t>());
    CHECK(ptd->header().flatbuffer_offset == header["flatbuffer_offset"].get<uint64_t>());
    CHECK(ptd->header().flatbuffer_size == header["flatbuffer_size"].get<uint64_t>());
    CHECK(ptd->header().segment_base_offset == header["segment_base_offset"].get<uint64_t>());
    CHECK(ptd->header().segment_data_size == header["segment_data_size"].get<uint64_t>());
    CHECK(ptd->version() == expected["version"].get<uint32_t>());

    REQUIRE(ptd->segments().size() == expected["segments"].size());
    for (size_t s = 0; s < ptd->segments().size(); ++s) {
      const json& e = expected["segments"][s];
      CHECK(ptd->segments()[s].offset == e["offset"].get<uint64_t>());
      CHECK(ptd->segments()[s].size == e["size"].get<uint64_t>());
      CHECK(ptd->segments()[s].file_offset == ptd->header().segment_base_offset + e["offset"].get<uint64_t>());
    }
    REQUIRE(ptd->entries().size() == expected["named_data"].size());
    for (size_t n = 0; n < ptd->entries().size(); ++n) {
      const json& e = expected["named_data"][n];
      const PtdEntry& entry = ptd->entries()[n];
      CHECK(entry.key == e["key"].get<std::string>());
      CHECK(entry.segment_index == e["segment_index"].get<uint32_t>());
      CHECK(entry.size == e["size"].get<uint64_t>());
      CHECK(entry.layout.has_value() == !e["tensor_layout"].is_null());
      CHECK(sha256_hex(ptd->bytes(entry)) == e["sha256"].get<std::string>());
      CHECK(ptd->find(entry.key) == &entry);
    }
    CHECK(ptd->find("no such key") == nullptr);
  }
}

TEST_CASE("ptd: the sm80 weights are a 64x32 and a 64 float32 tensor") {
  PTB_REQUIRE_FIXTURES();
  auto ptd = PtdFile::open(fixture("cuda/sm80/aoti_cuda_blob.ptd").string());
  REQUIRE(ptd.ok());
  const PtdEntry* weight = ptd->find("cuda_fqn_weight:cuda:layer.weight");
  const PtdEntry* bias = ptd->find("cuda_fqn_weight:cuda:layer.bias");
  REQUIRE(weight != nullptr);
  REQUIRE(bias != nullptr);
  CHECK(weight->size == 64 * 32 * 4);
  CHECK(bias->size == 64 * 4);
  CHECK(weight->file_offset == 384);
  CHECK(bias->file_offset == 384 + 8192);
}
