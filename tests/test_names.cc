#include <string>

#include "ptbundle/bundle/names.h"
#include "support.h"

using namespace ptb;

using ptb::test::contains;

namespace {

// The error text for `name`, or "" when it is accepted.
std::string refusal(const std::string& name) {
  auto status = check_part_name(name, "--part");
  return status.ok() ? std::string() : status.error().message;
}


}  // namespace

TEST_CASE("part names: ordinary names are accepted") {
  for (const char* name : {"encoder", "action_head", "Vision-Encoder.v2", "a", "_x", "9lives", "con_x",
                           "console", "nuller", "com10", "lpt", "encoder.ptd2", "ptd", "x.pte"}) {
    CAPTURE(name);
    CHECK(refusal(name).empty());
  }
  CHECK(refusal(std::string(200, 'a')).empty());
}

TEST_CASE("part names: length 1 to 200") {
  auto empty = refusal("");
  CHECK(contains(empty, "is empty"));
  auto long_name = refusal(std::string(201, 'a'));
  CHECK(contains(long_name, "201 characters long; expected at most 200"));
  CHECK(long_name.size() < 200);  // the error quotes a prefix, not the whole name
}

TEST_CASE("part names: only ASCII letters, digits, '_', '-', '.'") {
  CHECK(contains(refusal("enc/oder"), "contains '/' at position 3"));
  CHECK(contains(refusal("../x"), "contains '/'"));
  CHECK(contains(refusal("a b"), "contains byte 0x20 at position 1"));
  CHECK(contains(refusal("a\\b"), "contains '\\'"));
  CHECK(contains(refusal("enc:oder"), "contains ':'"));
  CHECK(contains(refusal("caf\xc3\xa9"), "contains byte 0xc3 at position 3"));
  CHECK(contains(refusal(std::string("a\0b", 3)), "contains byte 0x00 at position 1"));
  CHECK(contains(refusal("a*"), "expected only ASCII letters, digits, '_', '-' and '.'"));
}

TEST_CASE("part names: may not start with '.' or '-'") {
  CHECK(contains(refusal(".hidden"), "starts with '.'"));
  CHECK(contains(refusal("."), "starts with '.'"));
  CHECK(contains(refusal(".."), "starts with '.'"));
  CHECK(contains(refusal("-o"), "starts with '-'"));
  CHECK(contains(refusal("--force"), "reads as an option"));
  CHECK(refusal("a.").empty());
  CHECK(refusal("a-").empty());
}

TEST_CASE("part names: Windows device names in any case, with any extension") {
  for (const char* name : {"CON", "con", "Prn", "aux", "NUL", "nul.txt", "NUL.tar.gz", "com0", "COM9",
                           "Com5.bin", "lpt0", "LPT9", "lpt3.x"}) {
    CAPTURE(name);
    CHECK(contains(refusal(name), "is a Windows device name"));
  }
  for (const char* name : {"conx", "xnul", "com", "comA", "lpt10", "nul_", "aux-1"}) {
    CAPTURE(name);
    CHECK(refusal(name).empty());
  }
}

TEST_CASE("part names: may not end with .ptd") {
  CHECK(contains(refusal("encoder.ptd"), "ends with \".ptd\""));
  CHECK(contains(refusal("encoder.PTD"), "ends with \".ptd\""));
  CHECK(contains(refusal("x.ptd"), "would be one file"));
  CHECK(refusal("encoder_ptd").empty());
  CHECK(refusal("encoder.ptd.x").empty());
}

TEST_CASE("part names: the error starts with where the name came from") {
  auto status = check_part_name("a/b", "bundle.json: parts[1].name");
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().kind == ErrorKind::Invalid);
  CHECK(status.error().message.starts_with("bundle.json: parts[1].name: part name \"a/b\""));
}

TEST_CASE("part names: case collisions and duplicates") {
  CHECK(check_case_collisions({"encoder", "decoder", "head"}, "bundle").ok());
  CHECK(check_case_collisions({}, "bundle").ok());
  auto collision = check_case_collisions({"encoder", "head", "Encoder"}, "bundle");
  REQUIRE_FALSE(collision.ok());
  CHECK(contains(collision.error().message, "\"encoder\" and \"Encoder\" differ only in case"));
  auto duplicate = check_case_collisions({"head", "head"}, "bundle");
  REQUIRE_FALSE(duplicate.ok());
  CHECK(contains(duplicate.error().message, "\"head\" is given twice"));
}
