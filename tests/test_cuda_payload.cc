// The CudaBackend payload: decoded from every CUDA export and compared with
// ExecuTorch's decoding (dump.json), re-encoded to the same bytes, and the
// two older forms.
#include "fixture_dump.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/pte.h"

using namespace ptb;
using namespace ptb::test;
using nlohmann::json;

namespace {

Bytes text_bytes(const std::string& text) { return Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size()); }

}  // namespace

TEST_CASE("cuda payload: every export decodes as ExecuTorch decoded it and re-encodes byte for byte") {
  PTB_REQUIRE_FIXTURES();
  for (const auto& dir : cuda_fixture_dirs()) {
    json dump = read_json(dir / "dump.json");
    auto path = fixture("cuda") / dump["pte"]["file"].get<std::string>();
    CAPTURE(path.string());
    auto pte = PteFile::open(path.string());
    REQUIRE(pte.ok());
    const json& plan = dump["pte"]["program"]["execution_plans"][0];
    const json& expected = plan["delegates"][0]["cuda_aoti_metadata"];
    Bytes payload = pte->delegate_payload(0, 0);
    CHECK(payload.size() == expected["payload_size"].get<uint64_t>());
    auto decoded = decode_cuda_payload(payload, "forward", path.string() + ": forward delegate 0");
    REQUIRE_MESSAGE(decoded.ok(), error_of(decoded));
    CHECK(decoded->form == CudaPayloadForm::MultiVariant);
    CHECK(expected["magic"] == "ETCUDAFQN0");
    REQUIRE(decoded->variants.size() == expected["variants"].size());
    for (size_t v = 0; v < decoded->variants.size(); ++v) {
      const CudaVariant& variant = decoded->variants[v];
      const json& e = expected["variants"][v];
      CHECK(variant.target_sm == e["target_sm"].get<uint32_t>());
      CHECK(variant.ptx_compute == e["ptx_compute"].get<uint32_t>());
      CHECK(variant.fallback_only == e["fallback_only"].get<bool>());
      CHECK(variant.so_key == e["so_blob_key"].get<std::string>());
      // The library is named data in the .pte itself.
      const PteNamedData* library = pte->find_named_data(variant.so_key);
      CHECK((library != nullptr) == e["so_blob_in_pte"].get<bool>());
      if (library) CHECK(library->size == e["so_blob_size"].get<uint64_t>());
    }
    REQUIRE(decoded->weights.size() == expected["weights"].size());
    for (size_t w = 0; w < decoded->weights.size(); ++w) {
      const CudaWeight& weight = decoded->weights[w];
      const json& e = expected["weights"][w];
      CHECK(weight.fqn == e["fqn"].get<std::string>());
      CHECK(weight.storage_key == e["storage_key"].get<std::string>());
      CHECK(weight.storage_nbytes == e["storage_nbytes"].get<uint64_t>());
      CHECK(weight.dtype == e["dtype"].get<int32_t>());
      CHECK(std::string(scalar_type_name(static_cast<int8_t>(weight.dtype))) == "float32");
      CHECK(weight.device_type == e["device_type"].get<int32_t>());
      CHECK(weight.storage_offset == e["storage_offset"].get<int64_t>());
      CHECK(weight.sizes == e["sizes"].get<std::vector<int64_t>>());
      CHECK(weight.strides == e["strides"].get<std::vector<int64_t>>());
    }
    auto encoded = encode_cuda_payload(*decoded);
    CHECK(std::vector<uint8_t>(payload.begin(), payload.end()) == encoded);
  }
}

TEST_CASE("cuda payload: the merged reference lists sm80, sm90, sm120 and the compute_75 fallback") {
  PTB_REQUIRE_FIXTURES();
  auto pte = PteFile::open(fixture("cuda/merged_reference/model.pte").string());
  REQUIRE(pte.ok());
  auto decoded = decode_cuda_payload(pte->delegate_payload(0, 0), "forward", "merged");
  REQUIRE(decoded.ok());
  REQUIRE(decoded->variants.size() == 4);
  CHECK(decoded->variants[0].target_sm == 80);
  CHECK(decoded->variants[1].target_sm == 90);
  CHECK(decoded->variants[2].target_sm == 120);
  CHECK(decoded->variants[3].target_sm == 75);
  CHECK(decoded->variants[3].ptx_compute == 75);
  CHECK(decoded->variants[3].fallback_only);
  CHECK(decoded->weights.size() == 2);
}

TEST_CASE("cuda payload: the empty payload names its blobs after the method") {
  auto decoded = decode_cuda_payload(Bytes(), "forward", "x.pte: forward delegate 0");
  REQUIRE(decoded.ok());
  CHECK(decoded->form == CudaPayloadForm::MethodKeyed);
  CHECK(decoded->so_key == "forward_so_blob");
  CHECK(decoded->weights_key == "forward_weights_blob");
  CHECK(encode_cuda_payload(*decoded).empty());
  CHECK(std::string(cuda_payload_form_name(decoded->form)) == "method_keyed");
}

TEST_CASE("cuda payload: '<so_key>\\n<weights_key>' names both blobs") {
  std::string so = std::string(64, 'a') + "_so_blob";
  std::string weights = std::string(64, 'b') + "_weights_blob";
  std::string text = so + "\n" + weights;
  auto decoded = decode_cuda_payload(text_bytes(text), "forward", "x.pte: forward delegate 0");
  REQUIRE(decoded.ok());
  CHECK(decoded->form == CudaPayloadForm::SingleBlob);
  CHECK(decoded->so_key == so);
  CHECK(decoded->weights_key == weights);
  auto encoded = encode_cuda_payload(*decoded);
  CHECK(std::string(encoded.begin(), encoded.end()) == text);
  CHECK(std::string(cuda_payload_form_name(decoded->form)) == "single_blob");
}

TEST_CASE("cuda payload: malformed payloads give one line naming the place") {
  PTB_REQUIRE_FIXTURES();
  auto pte = PteFile::open(fixture("cuda/sm80/model.pte").string());
  REQUIRE(pte.ok());
  Bytes payload = pte->delegate_payload(0, 0);
  std::vector<uint8_t> bytes(payload.begin(), payload.end());
  // Every truncation fails cleanly.
  for (size_t length = 10; length < bytes.size(); ++length) {
    auto decoded = decode_cuda_payload(Bytes(bytes.data(), length), "forward", "sm80: forward delegate 0");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.rfind("sm80: forward delegate 0: CUDA payload", 0) == 0);
    CHECK(decoded.error().message.find('\n') == std::string::npos);
  }
  SUBCASE("trailing bytes") {
    bytes.push_back(0);
    auto decoded = decode_cuda_payload(Bytes(bytes.data(), bytes.size()), "forward", "ctx");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.find("follow the last weight") != std::string::npos);
  }
  SUBCASE("zero variants") {
    bytes[10] = 0;
    auto decoded = decode_cuda_payload(Bytes(bytes.data(), bytes.size()), "forward", "ctx");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.find("variant count 0") != std::string::npos);
  }
  SUBCASE("unknown flag bits") {
    bytes[10 + 4 + 8] = 2;
    auto decoded = decode_cuda_payload(Bytes(bytes.data(), bytes.size()), "forward", "ctx");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.find("flags 2") != std::string::npos);
  }
  SUBCASE("a native variant with PTX newer than its target") {
    bytes[10 + 4 + 4] = 90;  // ptx_compute 90 on sm_80
    auto decoded = decode_cuda_payload(Bytes(bytes.data(), bytes.size()), "forward", "ctx");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.find("compute_90") != std::string::npos);
  }
  SUBCASE("text that is no known form") {
    auto decoded = decode_cuda_payload(text_bytes("just one key"), "forward", "ctx");
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.error().message.find("not a known form") != std::string::npos);
  }
}

TEST_CASE("cuda payload: a multi-variant payload built in memory round-trips") {
  CudaPayload payload;
  payload.form = CudaPayloadForm::MultiVariant;
  payload.variants = {{80, 0, false, "a_so_blob"}, {90, 0, false, "b_so_blob"}, {75, 75, true, "c_so_blob"}};
  CudaWeight weight;
  weight.fqn = "w";
  weight.storage_key = "cuda_fqn_weight:cuda:w";
  weight.storage_nbytes = 24;
  weight.dtype = 6;
  weight.device_type = 1;
  weight.sizes = {2, 3};
  weight.strides = {3, 1};
  payload.weights = {weight};
  auto bytes = encode_cuda_payload(payload);
  auto decoded = decode_cuda_payload(Bytes(bytes.data(), bytes.size()), "forward", "ctx");
  REQUIRE(decoded.ok());
  REQUIRE(decoded->variants.size() == 3);
  CHECK(decoded->variants[2].fallback_only);
  CHECK(decoded->weights[0].sizes == std::vector<int64_t>{2, 3});
  CHECK(encode_cuda_payload(*decoded) == bytes);
}
