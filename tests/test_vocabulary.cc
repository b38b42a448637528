// The shared vocabulary (libbase text.h, dtype.h, sha256.h): one rule each,
// so a change in wording or overflow handling shows here, not in one reader.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "ptbundle/base/dtype.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"
#include "support.h"

using namespace ptb;

TEST_CASE("vocabulary: shape text, quoting and joining") {
  CHECK(shape_text(std::vector<int32_t>{1, 3, 224, 224}) == "[1, 3, 224, 224]");
  CHECK(shape_text(std::vector<uint64_t>{}) == "[]");
  CHECK(shape_text(std::vector<int64_t>{-1}) == "[-1]");
  CHECK(in_quotes("fc.weight") == "'fc.weight'");
  CHECK(in_quotes(std::string(1000, 'x')).size() < 260);  // clipped: a hostile name cannot flood a message
  CHECK(in_quotes(std::string("a\nb")).find('\n') == std::string::npos);
  CHECK(in_quotes(std::string(100, 'x'), 48) == "'" + std::string(48, 'x') + "... (100 bytes)'");
  CHECK(join(std::vector<std::string>{"sm_80", "sm_90"}, ", ") == "sm_80, sm_90");
  CHECK(join(std::vector<std::string>{}, ", ").empty());
}

TEST_CASE("vocabulary: UTF-8 is checked by one rule") {
  CHECK(is_utf8("plain"));
  CHECK(is_utf8("gr\xc3\xbc\xc3\x9f"));
  CHECK(is_utf8("\xf0\x9f\xa4\x96"));              // U+1F916
  CHECK_FALSE(is_utf8("\xc0\xaf"));                // overlong '/'
  CHECK_FALSE(is_utf8("\xed\xa0\x80"));            // a surrogate
  CHECK_FALSE(is_utf8("\xf4\x90\x80\x80"));        // past U+10FFFF
  CHECK_FALSE(is_utf8("\xe2\x82"));                // cut short
  CHECK_FALSE(is_utf8("\x80"));                    // a continuation byte first
}

TEST_CASE("vocabulary: tensor sizes overflow and go negative in one place") {
  CHECK(element_count(std::vector<int32_t>{}) == 1u);
  CHECK(element_count(std::vector<int64_t>{2, 0, 5}) == 0u);
  CHECK(element_count(std::vector<int64_t>{3, -1}) == std::nullopt);
  CHECK(element_count(std::vector<uint64_t>{1ull << 32, 1ull << 32}) == std::nullopt);
  CHECK(tensor_bytes(std::vector<int32_t>{4, 16}, ScalarType::Float) == 256u);
  CHECK(tensor_bytes(std::vector<int32_t>{4}, ScalarType::BFloat16) == 8u);
  CHECK(tensor_bytes(std::vector<uint64_t>{1ull << 62}, ScalarType::Float) == std::nullopt);  // bytes past 2^64
  CHECK(tensor_bytes(std::vector<int32_t>{4}, 99) == std::nullopt);
}

TEST_CASE("vocabulary: the file hasher fails rather than hash fewer bytes") {
  ptb::test::TempDir dir;
  const std::string path = (dir / "blob.bin").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "abc";
  }
  auto whole = sha256_file(path);
  REQUIRE(whole.ok());
  CHECK(*whole == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto mapped = MappedFile::open(path);
  REQUIRE(mapped.ok());
  auto middle = sha256_file_range(*mapped, 1, 1);
  REQUIRE(middle.ok());
  CHECK(*middle == to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>("b"), 1))));
  auto past = sha256_file_range(*mapped, 2, 5);
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message.find("past the end") != std::string::npos);
  // Cut short after it was opened: an I/O error naming the offset, not a digest of 1 byte.
  std::filesystem::resize_file(path, 1);
  auto cut = sha256_file_range(*mapped, 0, 3);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().kind == ErrorKind::Io);
  CHECK(cut.error().message.find("ended at offset 1") != std::string::npos);
  std::filesystem::create_symlink(path, dir / "link.bin");
  CHECK_FALSE(sha256_file((dir / "link.bin").string()).ok());  // no symlink followed
}

TEST_CASE("vocabulary: one JSON reader bounds depth and names the file") {
  auto deep = parse_json_bounded(std::string(100000, '[') + std::string(100000, ']'), "x.json", "a manifest");
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().message == "x.json: at byte 64: JSON nested more than 64 levels deep; expected a manifest");
  auto broken = parse_json_bounded("{\"a\": ", "y.json", "a signature");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message == "y.json: not valid JSON; expected a signature");
  auto fine = parse_json_bounded("{\"a\": [\"[[[\"]}", "z.json", "anything");  // brackets inside strings do not nest
  REQUIRE(fine.ok());
}
