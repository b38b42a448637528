// The robot API (ptbundle/robot.h) as a robot program sees it: linked to
// libptbundle.so alone. Trust in the process (a bundle changed after
// signing is refused with verify's message), a look into a bundle without a
// GPU, the dtype table and the misuse table.
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <fstream>

#include "ptbundle/robot.h"
#include "robot_support.h"

using namespace ptb::robot;
using namespace ptb::robot_test;

namespace {

// The first failed check's message in `ptbundle verify --json`'s document:
// what the robot API's error must carry.
std::string verify_says(const fs::path& bundle, const fs::path& pub, bool require_signature = false) {
  Command verify = cli("verify --gpu none --key " + quote(pub) + (require_signature ? " --require-signature " : " ") +
                       quote(bundle));
  REQUIRE(verify.exit_code == 1);
  return verify.out;
}

bool gpu_here() {
  auto found = gpus();
  return found.ok() && !found->empty();
}

}  // namespace

TEST_CASE("robot: the dtype table names each element type and its size") {
  struct Row {
    DType dtype;
    const char* name;
    size_t size;
  };
  const Row rows[] = {{DType::UInt8, "uint8", 1},     {DType::Int8, "int8", 1},       {DType::Bool, "bool", 1},
                      {DType::Int16, "int16", 2},     {DType::Float16, "float16", 2}, {DType::BFloat16, "bfloat16", 2},
                      {DType::Int32, "int32", 4},     {DType::Float32, "float32", 4}, {DType::Int64, "int64", 8},
                      {DType::Float64, "float64", 8}, {DType::UInt16, "uint16", 2},   {DType::UInt32, "uint32", 4},
                      {DType::UInt64, "uint64", 8}};
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(std::string(dtype_name(row.dtype)) == row.name);
    CHECK(dtype_size(row.dtype) == row.size);
    CHECK(dtype_from_name(row.name) == row.dtype);
    CHECK(dtype_from_number(static_cast<int32_t>(row.dtype)) == row.dtype);
  }
  CHECK(std::string(dtype_name(static_cast<DType>(9))) == "unknown");  // complex64: not one the runtime runs
  CHECK(dtype_size(static_cast<DType>(-1)) == 0);
  CHECK(!dtype_from_number(9));
  CHECK(!dtype_from_name("float8"));
}

TEST_CASE("robot: the misuse table: each wrong call is refused naming what is wrong") {
  TensorInfo image{"image", true, DType::Float32, {1, 3, 32, 32}, {}};
  TensorInfo tokens{"tokens", true, DType::Int64, {1, 16}, {{1, 2, 64}}};
  TensorInfo features{"features", true, DType::Float32, {1, 32}, {}};
  const std::vector<TensorInfo> ins{image, tokens}, outs{features};
  alignas(16) static std::array<uint8_t, 1 << 16> memory{};
  auto view = [](const TensorInfo& spec, Memory where = Memory::Device) {
    return TensorView{memory.data(), spec.dtype, spec.shape, {}, where, 0, 0};
  };
  const std::vector<TensorView> good_in{view(image), view(tokens)}, good_out{view(features)};
  CHECK(check_call(ins, outs, good_in, good_out, 0).ok());
  // A dynamic dimension inside its bounds.
  auto longer = good_in;
  longer[1].shape = {1, 40};
  CHECK(check_call(ins, outs, longer, good_out, 0).ok());

  struct Row {
    const char* what;
    std::vector<TensorView> in, out;
    int device;
    const char* message;
  };
  std::vector<Row> rows;
  auto with_in = [&](size_t i, auto change) {
    auto copy = good_in;
    change(copy[i]);
    return copy;
  };
  auto with_out = [&](auto change) {
    auto copy = good_out;
    change(copy[0]);
    return copy;
  };
  rows.push_back({"one input missing", {good_in[0]}, good_out, 0, "1 input(s); the method takes 2"});
  rows.push_back({"no output", good_in, {}, 0, "0 output(s); the method gives 1"});
  rows.push_back({"wrong dtype", with_in(0, [](TensorView& v) { v.dtype = DType::Float16; }), good_out, 0,
                  "input 0 (image): dtype is float16; the method takes float32"});
  rows.push_back({"wrong shape", with_in(0, [](TensorView& v) { v.shape = {1, 32, 32, 3}; }), good_out, 0,
                  "input 0 (image): shape is [1, 32, 32, 3]; the method takes [1, 3, 32, 32]"});
  rows.push_back({"wrong rank", with_in(0, [](TensorView& v) { v.shape = {3, 32, 32}; }), good_out, 0,
                  "shape is [3, 32, 32]; the method takes [1, 3, 32, 32]"});
  rows.push_back({"dynamic dimension past its bound", with_in(1, [](TensorView& v) { v.shape = {1, 65}; }), good_out, 0,
                  "input 1 (tokens): shape is [1, 65]; the method takes [1, 16]; dimension 1 may be 2..64"});
  rows.push_back({"null data", with_in(1, [](TensorView& v) { v.data = nullptr; }), good_out, 0,
                  "input 1: data is a null pointer"});
  rows.push_back({"wrong device", with_in(0, [](TensorView& v) { v.device = 1; }), good_out, 0,
                  "input 0: is on CUDA device 1; the model is on device 0"});
  rows.push_back({"host and device mixed", good_in, with_out([](TensorView& v) { v.memory = Memory::Host; }), 0,
                  "output 0: is in host memory; the call's first input is in device memory"});
  rows.push_back({"output too small", good_in, with_out([](TensorView& v) { v.capacity = 64; }), 0,
                  "output 0: needs 128 bytes for float32 [1, 32]; its buffer holds 64"});
  rows.push_back({"output of the wrong dtype", good_in, with_out([](TensorView& v) { v.dtype = DType::BFloat16; }), 0,
                  "output 0 (features): dtype is bfloat16; the method takes float32"});
  rows.push_back({"strides of the wrong count", with_in(0, [](TensorView& v) { v.strides = {1, 2}; }), good_out, 0,
                  "input 0: 2 strides for 4 dimensions"});
  rows.push_back({"negative size", with_in(1, [](TensorView& v) { v.shape = {1, -3}; }), good_out, 0, "input 1"});
  rows.push_back({"not a DType", with_in(0, [](TensorView& v) { v.dtype = static_cast<DType>(99); }), good_out, 0,
                  "input 0: dtype 99 is not a ptb::robot::DType"});
  rows.push_back({"non-contiguous host memory",
                  [&] {
                    auto host = good_in;
                    for (auto& v : host) v.memory = Memory::Host;
                    host[0].strides = {3072, 1, 96, 3};
                    return host;
                  }(),
                  [&] {
                    auto host = good_out;
                    host[0].memory = Memory::Host;
                    return host;
                  }(),
                  0, "input 0: host memory must be contiguous"});
  for (const Row& row : rows) {
    CAPTURE(row.what);
    ptb::Status status = check_call(ins, outs, row.in, row.out, row.device);
    REQUIRE(!status.ok());
    CHECK(status.error().kind == ptb::ErrorKind::Usage);
    CHECK_MESSAGE(contains(status.error().message, row.message), status.error().message);
  }
}

TEST_CASE("robot: a bundle whose weights changed after signing is refused with verify's message") {
  PTB_ROBOT_FIXTURES();
  TempDir dir;
  make_keys(dir.path(), "");
  make_keys(dir.path(), "other_");
  const fs::path bundle = dir / "bundle";
  make_bundle(bundle);
  sign(bundle, dir / "key.pem");
  const std::string pub = (dir / "pub.pem").string();

  // Intact: the checks pass, and what stops the open here is the missing GPU.
  Options options;
  options.keys = {pub};
  options.require_signature = true;
  auto intact = Model::open(bundle.string(), options);
  if (!gpu_here()) {
    REQUIRE(!intact.ok());
    CHECK_MESSAGE(!contains(intact.error().message, "signature"), intact.error().message);
    CHECK_MESSAGE(contains(intact.error().message, "GPU"), intact.error().message);
  }
  // The key as PEM text, not a path: the same.
  Options as_text = options;
  as_text.keys = {read_text(pub)};
  auto from_text = Model::open(bundle.string(), as_text);
  if (!gpu_here()) CHECK_MESSAGE(contains(from_text.error().message, "GPU"), from_text.error().message);

  SUBCASE("weights changed") {
    flip_byte(bundle / "encoder.ptd", 4096);
    const std::string said = verify_says(bundle, pub);
    auto refused = Model::open(bundle.string(), options);
    REQUIRE(!refused.ok());
    const std::string& message = refused.error().message;
    CHECK(refused.error().kind == ptb::ErrorKind::Invalid);
    CHECK_MESSAGE(contains(message, "encoder.ptd: SHA-256 is "), message);
    CHECK_MESSAGE(contains(message, "the file changed after signing"), message);
    // The message is verify's own: the CLI prints the same text.
    const std::string reason = message.substr(message.find("SHA-256 is "), 60);
    CHECK_MESSAGE(contains(said, reason), said);
    // Bundle::open with the key checks bundle.json only: it still lists the part.
    auto looked = Bundle::open(bundle.string(), options);
    CHECK_MESSAGE(looked.ok(), looked.error().message);
  }
  SUBCASE("re-signed with another key") {
    sign(bundle, dir / "other_key.pem");
    auto refused = Model::open(bundle.string(), options);
    REQUIRE(!refused.ok());
    CHECK_MESSAGE(contains(verify_says(bundle, pub), refused.error().message.substr(0, 40)), refused.error().message);
    auto looked = Bundle::open(bundle.string(), options);
    REQUIRE(!looked.ok());
    CHECK(looked.error().message == refused.error().message);
  }
  SUBCASE("unsigned, with a signature required") {
    fs::remove(bundle / "bundle.sig");
    auto refused = Model::open(bundle.string(), options);
    REQUIRE(!refused.ok());
    CHECK_MESSAGE(contains(refused.error().message, "not signed"), refused.error().message);
    Options no_key;
    no_key.require_signature = true;
    auto unchecked = Model::open(bundle.string(), no_key);
    REQUIRE(!unchecked.ok());
    CHECK_MESSAGE(contains(unchecked.error().message, "--require-signature requires"), unchecked.error().message);
  }
  SUBCASE("bundle.json changed after signing") {
    std::string manifest = read_text(bundle / "bundle.json");
    manifest.insert(manifest.find('{') + 1, " ");
    fs::remove(bundle / "bundle.json");
    std::ofstream(bundle / "bundle.json", std::ios::binary) << manifest;
    auto refused = Model::open(bundle.string(), options);
    REQUIRE(!refused.ok());
    CHECK_MESSAGE(contains(refused.error().message, "bundle.json: SHA-256 is "), refused.error().message);
    CHECK_MESSAGE(contains(refused.error().message, "the file changed after signing"), refused.error().message);
  }
  SUBCASE("a key that is no key") {
    Options bad;
    bad.keys = {(dir / "missing.pem").string()};
    auto refused = Model::open(bundle.string(), bad);
    REQUIRE(!refused.ok());
    CHECK_MESSAGE(contains(refused.error().message, "missing.pem"), refused.error().message);
  }
}

TEST_CASE("robot: opening one part checks that part only; another part's change refuses that part") {
  PTB_ROBOT_FIXTURES();
  TempDir dir;
  make_keys(dir.path(), "");
  const fs::path bundle = dir / "bundle";
  make_bundle(bundle, true);
  sign(bundle, dir / "key.pem");
  flip_byte(bundle / "other.ptd", 4096);
  Options encoder;
  encoder.part = "encoder";
  encoder.keys = {(dir / "pub.pem").string()};
  auto opened = Model::open(bundle.string(), encoder);
  if (!gpu_here()) CHECK_MESSAGE(!contains(opened.error().message, "other.ptd"), opened.error().message);
  Options other = encoder;
  other.part = "other";
  auto refused = Model::open(bundle.string(), other);
  REQUIRE(!refused.ok());
  CHECK_MESSAGE(contains(refused.error().message, "other.ptd: SHA-256 is "), refused.error().message);
}

TEST_CASE("robot: Bundle::open lists parts, methods, dtypes and shapes with no GPU") {
  PTB_ROBOT_FIXTURES();
  TempDir dir;
  make_keys(dir.path(), "");
  const fs::path bundle = dir / "bundle";
  make_bundle(bundle, true);
  auto looked = Bundle::open(bundle.string());
  REQUIRE_MESSAGE(looked.ok(), looked.error().message);
  CHECK(looked->signature().state == SignatureState::Unsigned);
  REQUIRE(looked->parts().size() == 2);
  const PartInfo* part = looked->find_part("encoder");
  REQUIRE(part);
  CHECK(part->source == "executorch");
  CHECK(!part->gpu_targets.empty());
  REQUIRE(part->methods.size() == 1);
  const MethodInfo& method = part->methods[0];
  CHECK(method.name == "forward");
  REQUIRE(!method.inputs.empty());
  REQUIRE(!method.outputs.empty());
  // What inspect says of the same bundle: the same dtype and shape.
  Command inspect = cli("inspect " + quote(bundle));
  REQUIRE(inspect.exit_code == 0);
  for (const TensorInfo& input : method.inputs) {
    CAPTURE(input.name);
    CHECK(input.known);
    CHECK(input.bytes() == dtype_size(input.dtype) * [&] {
            size_t n = 1;
            for (int64_t s : input.shape) n *= static_cast<size_t>(s);
            return n;
          }());
    CHECK(contains(inspect.out, dtype_name(input.dtype)));
  }
  CHECK(!looked->find_part("missing"));

  sign(bundle, dir / "key.pem");
  auto unchecked = Bundle::open(bundle.string());
  REQUIRE(unchecked.ok());
  CHECK(unchecked->signature().state == SignatureState::Unchecked);
  CHECK(unchecked->signature().key_fingerprint.size() == 64);
  Options with_key;
  with_key.keys = {(dir / "pub.pem").string()};
  auto verified = Bundle::open(bundle.string(), with_key);
  REQUIRE_MESSAGE(verified.ok(), verified.error().message);
  CHECK(verified->signature().state == SignatureState::Verified);
  CHECK(contains(verified->signature().key, "pub.pem"));

  auto missing = Bundle::open((dir / "nothing").string());
  CHECK(!missing.ok());
}

TEST_CASE("robot: a moved-from Model answers every call with an error [gpu]") {
  PTB_ROBOT_FIXTURES();
  if (!gpu_here()) {
    MESSAGE("SKIPPED: no CUDA GPU here (a Model exists only once a part is loaded on one)");
    return;
  }
  const fs::path examples = fs::path(PTB_SOURCE_DIR) / "examples";
  TempDir dir;
  const fs::path bundle = dir / "bundle";
  Command made = cli("export -o " + quote(bundle) + " --part encoder=" + quote(examples / "encoder.pt2") +
                     " --example encoder=" + quote(examples / "encoder.in0.npy") + ":" + quote(examples / "encoder.out0.npy"));
  REQUIRE_MESSAGE(made.exit_code == 0, made.out);
  auto model = Model::open(bundle.string());
  REQUIRE_MESSAGE(model.ok(), model.error().message);
  CHECK(model->verification().failed == 0);
  CHECK(model->verification().passed > 0);
  MESSAGE("[gpu] robot: part encoder checked in " << model->info().check_ms << " ms, test case "
                                                  << model->info().testcase_ms << " ms, loaded in " << model->info().total_ms
                                                  << " ms");
  Model moved = std::move(*model);
  CHECK(moved.loaded());
  CHECK(!model->loaded());
  CHECK(model->info().part.empty());
  CHECK(!model->run(std::vector<Tensor>{}).ok());
  CHECK(!model->run(std::span<const TensorView>{}, std::span<const TensorView>{}).ok());
  CHECK(!model->time({}).ok());
  CHECK(model->graphs().why_not.find("moved from") != std::string::npos);
  // A host call with outputs the program owns, and a stream refused with host memory.
  std::vector<float> image(1 * 3 * 32 * 32, 0.5f), features(32);
  TensorView in{image.data(), DType::Float32, {1, 3, 32, 32}, {}, Memory::Host, 0, 0};
  TensorView out{features.data(), DType::Float32, {1, 32}, {}, Memory::Host, 0, 0};
  auto status = moved.run(std::span(&in, 1), std::span(&out, 1));
  CHECK_MESSAGE(status.ok(), status.error().message);
  int not_a_stream = 0;
  auto with_stream = moved.run(std::span(&in, 1), std::span(&out, 1), &not_a_stream);
  CHECK(!with_stream.ok());
}
