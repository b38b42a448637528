// The C interface (ptbundle/ptbundle.h): every misuse an error with a
// message, never a crash; the same trust and the same look into a bundle
// as the C++ API.
#include <doctest/doctest.h>

#include <fstream>

#include "ptbundle/ptbundle.h"
#include "robot_support.h"

using namespace ptb::robot_test;

namespace {

std::string last_error() { return ptb_last_error(); }

}  // namespace

TEST_CASE("c api: NULL handles and bad options are errors with a message") {
  CHECK(ptb_abi_version() == PTB_ABI_VERSION);
  CHECK(ptb_model_run(nullptr, nullptr, 0, nullptr, 0, nullptr) == PTB_USAGE);
  CHECK(contains(last_error(), "NULL model"));
  char* json = nullptr;
  CHECK(ptb_model_describe(nullptr, &json) == PTB_USAGE);
  CHECK(json == nullptr);
  CHECK(ptb_model_num_inputs(nullptr) == 0);
  ptb_model* model = nullptr;
  CHECK(ptb_model_open(nullptr, nullptr, &model) == PTB_USAGE);
  CHECK(ptb_model_open("x", nullptr, nullptr) == PTB_USAGE);
  ptb_model_free(nullptr);
  ptb_options_free(nullptr);

  ptb_options* options = ptb_options_new();
  REQUIRE(options);
  CHECK(ptb_options_set(options, "part", "encoder") == PTB_OK);
  CHECK(ptb_options_set(options, "verify", "maybe") == PTB_USAGE);
  CHECK(contains(last_error(), "option verify: 'maybe'; expected true or false"));
  CHECK(ptb_options_set(options, "device", "-1") == PTB_USAGE);
  CHECK(ptb_options_set(options, "device", "1x") == PTB_USAGE);
  CHECK(ptb_options_set(options, "runtime", "tensorrt") == PTB_USAGE);
  CHECK(ptb_options_set(options, "colour", "blue") == PTB_USAGE);
  CHECK(contains(last_error(), "no option 'colour'"));
  CHECK(ptb_options_set(options, nullptr, "x") == PTB_USAGE);
  CHECK(ptb_options_add_key(options, nullptr) == PTB_USAGE);
  CHECK(ptb_model_open("/nonexistent/bundle", options, &model) != PTB_OK);
  CHECK(model == nullptr);
  CHECK(contains(last_error(), "/nonexistent/bundle"));
  ptb_options_free(options);
}

TEST_CASE("c api: a bundle changed after signing is refused with verify's message; a look needs no GPU") {
  if (!fixtures()) {
    MESSAGE("SKIPPED: no fixtures (../shared/fixtures or $PTB_FIXTURES)");
    return;
  }
  TempDir dir;
  make_keys(dir.path(), "");
  const fs::path bundle = dir / "bundle";
  make_bundle(bundle);
  sign(bundle, dir / "key.pem");
  ptb_options* options = ptb_options_new();
  REQUIRE(ptb_options_add_key(options, (dir / "pub.pem").c_str()) == PTB_OK);
  REQUIRE(ptb_options_set(options, "require_signature", "true") == PTB_OK);

  char* json = nullptr;
  REQUIRE_MESSAGE(ptb_bundle_describe(bundle.c_str(), options, &json) == PTB_OK, last_error());
  const std::string described = json;
  ptb_string_free(json);
  CHECK(contains(described, "\"state\": \"verified\""));
  CHECK(contains(described, "\"name\": \"encoder\""));
  CHECK(contains(described, "\"dtype\": \"float32\""));

  flip_byte(bundle / "encoder.ptd", 4096);
  ptb_model* model = nullptr;
  CHECK(ptb_model_open(bundle.c_str(), options, &model) == PTB_INVALID);
  CHECK(model == nullptr);
  CHECK_MESSAGE(contains(last_error(), "encoder.ptd: SHA-256 is "), last_error());
  CHECK_MESSAGE(contains(last_error(), "the file changed after signing"), last_error());
  ptb_options_free(options);
}
