#include <cstring>
#include <filesystem>

#include "ptbundle/formats/npy.h"
#include "support.h"

using namespace ptb;
using ptb::test::TempDir;

namespace {

uint32_t word_at(Bytes data, size_t index) {
  uint32_t word = 0;
  std::memcpy(&word, data.data() + 4 * index, 4);
  return word;
}

float float_at(Bytes data, size_t index) {
  float value = 0;
  std::memcpy(&value, data.data() + 4 * index, 4);
  return value;
}

// A .npy written byte by byte the way numpy.save lays it out.
std::string npy_bytes(uint8_t major, const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

Result<NpyHeader> parse(const std::string& bytes) {
  return parse_npy_header(Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "t.npy");
}

std::string error_of(const std::string& bytes) {
  auto header = parse(bytes);
  REQUIRE_FALSE(header.ok());
  return header.error().message;
}

}  // namespace

TEST_CASE("npy: the input numpy wrote for mlp_et is float32 [4,16]") {
  PTB_REQUIRE_FIXTURES();
  auto npy = NpyFile::open(ptb::test::fixture("aoti/mlp_et.in0.npy").string());
  REQUIRE_MESSAGE(npy.ok(), npy.error().message);
  const NpyHeader& h = npy->header();
  CHECK(h.major_version == 1);
  CHECK(h.minor_version == 0);
  CHECK(h.descr == "<f4");
  CHECK(h.scalar_type == 6);
  CHECK(h.element_size == 4);
  CHECK(h.shape == std::vector<uint64_t>{4, 16});
  CHECK(h.element_count == 64);
  CHECK(h.data_offset == 128);
  CHECK(h.data_size == 256);
  REQUIRE(npy->data().size() == 256);
  // Values read with Python's struct module from the same file.
  CHECK(word_at(npy->data(), 0) == 0xbf6cb6adu);
  CHECK(word_at(npy->data(), 1) == 0xbed9c6b8u);
  CHECK(float_at(npy->data(), 2) == doctest::Approx(-2.643845796585083));
  CHECK(float_at(npy->data(), 17) == doctest::Approx(1.2168909311294556));
  CHECK(float_at(npy->data(), 63) == doctest::Approx(-1.0822831392288208));
}

TEST_CASE("npy: the expected output of mlp_et is float32 [4,8] after a ReLU") {
  PTB_REQUIRE_FIXTURES();
  auto npy = NpyFile::open(ptb::test::fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE_MESSAGE(npy.ok(), npy.error().message);
  CHECK(npy->header().shape == std::vector<uint64_t>{4, 8});
  CHECK(npy->header().scalar_type == 6);
  REQUIRE(npy->data().size() == 128);
  CHECK(word_at(npy->data(), 0) == 0x3d7068bau);
  CHECK(word_at(npy->data(), 1) == 0x3f226230u);
  CHECK(float_at(npy->data(), 2) == doctest::Approx(0.07830759882926941));
  CHECK(float_at(npy->data(), 17) == 0.0f);
  for (size_t i = 0; i < 32; ++i) CHECK(float_at(npy->data(), i) >= 0.0f);
}

TEST_CASE("npy: our header is byte-identical to the one numpy wrote") {
  PTB_REQUIRE_FIXTURES();
  auto real = MappedFile::open(ptb::test::fixture("aoti/mlp_et.in0.npy").string());
  REQUIRE(real.ok());
  uint64_t shape[] = {4, 16};
  auto ours = make_npy_header(6, shape);
  REQUIRE(ours.ok());
  REQUIRE(ours->size() == 128);
  CHECK(std::memcmp(ours->data(), real->bytes().data(), 128) == 0);

  TempDir dir;
  auto copy = (dir / "copy.npy").string();
  Bytes data = real->bytes().subspan(128);
  REQUIRE(write_npy(copy, 6, shape, data).ok());
  CHECK(ptb::test::read_text(copy) == ptb::test::read_text(ptb::test::fixture("aoti/mlp_et.in0.npy")));
}

TEST_CASE("npy: every supported dtype maps to its ScalarType") {
  struct Row {
    const char* descr;
    int8_t scalar_type;
  };
  for (auto [descr, type] : {Row{"<f4", 6}, Row{"<f8", 7}, Row{"<f2", 5}, Row{"|i1", 1}, Row{"<i2", 2},
                             Row{"<i4", 3}, Row{"<i8", 4}, Row{"|u1", 0}, Row{"<u2", 27}, Row{"<u4", 28},
                             Row{"<u8", 29}, Row{"|b1", 11}, Row{"bfloat16", 15}}) {
    CAPTURE(descr);
    CHECK(scalar_type_from_npy_descr(descr) == type);
    CHECK(npy_descr(type) == std::string_view(descr));
  }
  CHECK_FALSE(npy_descr(8).has_value());  // complex32 has no mapping
  // ml_dtypes saves bfloat16 arrays as 2-byte raw values: read as bfloat16,
  // written back under numpy's own name for it.
  CHECK(scalar_type_from_npy_descr("<V2") == 15);
  CHECK(npy_descr(15) == std::string_view("bfloat16"));
  CHECK_FALSE(scalar_type_from_npy_descr("<V4").has_value());
}

TEST_CASE("npy: hand-written files in versions 1, 2 and 3 with odd but valid headers") {
  // 1-d bool, key order of older numpy, double quotes.
  auto h = parse(npy_bytes(1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"|b1\"}", std::string("\x01\x00\x01", 3)));
  REQUIRE_MESSAGE(h.ok(), h.error().message);
  CHECK(h->scalar_type == 11);
  CHECK(h->shape == std::vector<uint64_t>{3});
  CHECK(h->data_offset == 128);

  auto v2 = parse(npy_bytes(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1, ), }",
                            std::string(16, '\x07')));
  REQUIRE_MESSAGE(v2.ok(), v2.error().message);
  CHECK(v2->major_version == 2);
  CHECK(v2->data_offset == 128);
  CHECK(v2->shape == std::vector<uint64_t>{2, 1});

  auto scalar = parse(npy_bytes(3, "{'descr': '<u2', 'fortran_order': False, 'shape': ()}", "\x34\x12"));
  REQUIRE_MESSAGE(scalar.ok(), scalar.error().message);
  CHECK(scalar->shape.empty());
  CHECK(scalar->element_count == 1);
  CHECK(scalar->scalar_type == 27);

  auto empty = parse(npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }", ""));
  REQUIRE(empty.ok());
  CHECK(empty->element_count == 0);
}

TEST_CASE("npy: bad files are refused with the reason") {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  CHECK(parse(npy_bytes(1, f4, std::string(8, '\0'))).ok());
  CHECK(error_of("not numpy").find("not a .npy file") != std::string::npos);
  CHECK(error_of(npy_bytes(4, f4, std::string(8, '\0'))).find("version 4.0") != std::string::npos);
  CHECK(error_of(npy_bytes(1, f4, std::string(7, '\0'))).find("7 bytes of data follow the header; expected 8") !=
        std::string::npos);
  CHECK(error_of(npy_bytes(1, f4, std::string(9, '\0'))).find("expected 8") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')))
            .find("big-endian") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", std::string(8, '\0')))
            .find("fortran_order") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0')))
            .find("'<c8' is not supported") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""))
            .find("overflows") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""))
            .find("64 bits") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", ""))
            .find("non-negative") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False}", "")).find("missing key") !=
        std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", ""))
            .find("appears twice") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", ""))
            .find("unexpected key 'x'") != std::string::npos);
  CHECK(error_of(npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", ""))
            .find("trailing comma") != std::string::npos);

  // Every truncation of a valid file fails cleanly.
  std::string whole = npy_bytes(1, f4, std::string(8, '\0'));
  for (size_t size = 0; size < whole.size(); ++size) {
    CAPTURE(size);
    CHECK_FALSE(parse(whole.substr(0, size)).ok());
  }
  // A header length pointing past the end of the file.
  std::string long_length = whole;
  long_length[8] = '\xff';
  long_length[9] = '\x7f';
  CHECK(error_of(long_length).find("extends past the end") != std::string::npos);
}

TEST_CASE("npy: write_npy round-trips every dtype and refuses a size mismatch") {
  TempDir dir;
  uint64_t shape[] = {3, 2};
  for (int8_t type : {0, 1, 2, 3, 4, 5, 6, 7, 11, 15, 27, 28, 29}) {
    CAPTURE(int(type));
    auto descr = npy_descr(type);
    REQUIRE(descr.has_value());
    uint64_t size = (*descr == "|u1" || *descr == "|i1" || *descr == "|b1") ? 1
                    : (descr->ends_with('2') || *descr == "bfloat16") ? 2
                    : descr->ends_with('4')                          ? 4
                                                                     : 8;
    std::vector<uint8_t> data(6 * size);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 2);
    auto path = (dir / "a.npy").string();
    REQUIRE(write_npy(path, type, shape, Bytes(data.data(), data.size())).ok());
    auto npy = NpyFile::open(path);
    REQUIRE_MESSAGE(npy.ok(), npy.error().message);
    CHECK(npy->header().scalar_type == type);
    CHECK(npy->header().shape == std::vector<uint64_t>{3, 2});
    CHECK(npy->header().data_offset % 64 == 0);
    CHECK(std::equal(npy->data().begin(), npy->data().end(), data.begin(), data.end()));
  }
  std::vector<uint8_t> short_data(5);
  auto bad = write_npy((dir / "b.npy").string(), 6, shape, Bytes(short_data.data(), short_data.size()));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("expected 6 elements of 4 bytes") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "b.npy"));
  CHECK_FALSE(write_npy((dir / "c.npy").string(), 8, shape, Bytes()).ok());
}
