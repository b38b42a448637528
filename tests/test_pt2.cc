#include <filesystem>
#include <fstream>

#include <zip.h>

#include "ptbundle/formats/pt2.h"
#include "ptbundle/base/sha256.h"
#include "support.h"

using namespace ptb;
using ptb::test::TempDir;

namespace {

constexpr uint64_t kNoLimit = UINT64_MAX;
const std::string kEtDir = "mlp_et/data/aotinductor/model/";
const std::string kEtStem = kEtDir + "c245hcyfor5eg462qiaickptg2etf5wb67g6fdmmdzipjhgfotyu.wrapper";

std::string hex_digest(const std::vector<uint8_t>& bytes) { return to_hex(sha256(Bytes(bytes.data(), bytes.size()))); }

}  // namespace

TEST_CASE("pt2: mlp_et.pt2 (ExecuTorch options) has its weights in a blob and kernels in the library") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(ptb::test::fixture("aoti/mlp_et.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  CHECK(package->root() == "mlp_et/");
  CHECK(package->archive_format() == "pt2");
  CHECK(package->archive_version() == "0");
  CHECK(package->entries().size() == 11);
  CHECK(package->external_weight_entries().empty());

  REQUIRE(package->models().size() == 1);
  const Pt2Model& model = package->models()[0];
  CHECK(model.name == "model");
  CHECK(model.directory == kEtDir);
  CHECK(model.wrapper_library == kEtStem + ".so");
  REQUIRE(model.weights_blob.has_value());
  CHECK(*model.weights_blob == kEtStem + "_weights.blob");
  CHECK(model.kernel_binaries.empty());
  CHECK_FALSE(model.weights_in_library());
  CHECK_FALSE(model.kernels_in_separate_files());
  CHECK(model.cpp_sources.size() == 2);
  CHECK(model.object_files.empty());
  REQUIRE(model.metadata_entry.has_value());
  CHECK(*model.metadata_entry == kEtStem + "_metadata.json");
  REQUIRE(model.metadata.size() == 5);
  CHECK(model.metadata[0].first == "AOTI_DEVICE_KEY");  // file order is kept
  CHECK(*model.metadata_value("AOTI_DEVICE_KEY") == "cuda");
  CHECK(*model.metadata_value("AOTI_PLATFORM") == "linux");
  CHECK(*model.metadata_value("AOTI_MACHINE") == "x86_64");
  CHECK(*model.metadata_value("AOTI_CPU_ISA") == "AVX512 AVX512_VNNI AMX_TILE");
  CHECK(*model.metadata_value("AOTI_COMPUTE_CAPABILITY") == "90");
  CHECK(model.metadata_value("AOTI_NOT_THERE") == nullptr);

  const Pt2Entry* library = package->find_entry(model.wrapper_library);
  REQUIRE(library);
  CHECK(library->size == 2302696);
  CHECK(library->compressed_size == 2302696);
  CHECK(library->compression_method == 0);
  CHECK(library->crc32 == 0x77401588u);
  const Pt2Entry* blob = package->find_entry(*model.weights_blob);
  REQUIRE(blob);
  CHECK(blob->size == 3200);
  CHECK(blob->crc32 == 0x7794b84fu);

  // Digests computed independently with `unzip -p mlp_et.pt2 '*wrapper_weights.blob' | sha256sum`.
  auto blob_bytes = package->read_entry(*model.weights_blob, 3200);
  REQUIRE_MESSAGE(blob_bytes.ok(), blob_bytes.error().message);
  CHECK(blob_bytes->size() == 3200);
  CHECK(hex_digest(*blob_bytes) == "cf2ce5efff8d4611b11fedb328b1775f205ea01887f9aacda7b75d0c4485d5bd");
}

TEST_CASE("pt2: mlp_sm90.pt2 (default options) has two cubins and its weights in the library") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(ptb::test::fixture("aoti/mlp_sm90.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  CHECK(package->root() == "mlp/");
  CHECK(package->entries().size() == 12);
  REQUIRE(package->models().size() == 1);
  const Pt2Model& model = package->models()[0];
  CHECK(model.name == "model");
  CHECK(model.wrapper_library ==
        "mlp/data/aotinductor/model/calwzalqdzdvgjtyg2f7ifxmz4jk3blxx75opyz5nchbnpdzrnwp.wrapper.so");
  CHECK_FALSE(model.weights_blob.has_value());
  CHECK(model.weights_in_library());
  CHECK(model.kernels_in_separate_files());
  REQUIRE(model.kernel_binaries.size() == 2);
  CHECK(model.kernel_binaries[0] ==
        "mlp/data/aotinductor/model/cj5jc44ii5saeckbg5pt2qt6sov35toygjqbvcyja3efwv23qx5c.cubin");
  CHECK(package->find_entry(model.kernel_binaries[0])->size == 7248);
  CHECK(package->find_entry(model.kernel_binaries[1])->size == 7496);
  CHECK(package->find_entry(model.wrapper_library)->size == 2298152);
  CHECK(*model.metadata_value("AOTI_COMPUTE_CAPABILITY") == "90");

  // A cubin is an ELF for NVIDIA (e_machine 190 = EM_CUDA).
  auto cubin = package->read_entry(model.kernel_binaries[0], 1 << 20);
  REQUIRE(cubin.ok());
  REQUIRE(cubin->size() == 7248);
  CHECK((*cubin)[0] == 0x7f);
  CHECK((*cubin)[1] == 'E');
  CHECK((*cubin)[18] == 190);
}

TEST_CASE("pt2: mlp_et_ptx.pt2 has the ExecuTorch layout with a larger library") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(ptb::test::fixture("aoti/mlp_et_ptx.pt2").string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  CHECK(package->root() == "mlp_et_ptx/");
  REQUIRE(package->models().size() == 1);
  const Pt2Model& model = package->models()[0];
  CHECK(model.kernel_binaries.empty());
  REQUIRE(model.weights_blob.has_value());
  CHECK(package->find_entry(*model.weights_blob)->size == 3200);
  CHECK(package->find_entry(model.wrapper_library)->size == 2306792);
  CHECK(*model.metadata_value("AOTI_COMPUTE_CAPABILITY") == "90");
  CHECK(package->find_model("model") == &model);
  CHECK(package->find_model("other") == nullptr);
}

TEST_CASE("pt2: extracting the wrapper library streams the exact bytes") {
  PTB_REQUIRE_FIXTURES();
  auto package = Pt2Package::open(ptb::test::fixture("aoti/mlp_et.pt2").string());
  REQUIRE(package.ok());
  TempDir dir;
  auto target = (dir / "wrapper.so").string();
  auto status = package->extract_entry_to(kEtStem + ".so", target, 8 << 20);
  REQUIRE_MESSAGE(status.ok(), status.error().message);
  auto file = MappedFile::open(target);
  REQUIRE(file.ok());
  CHECK(file->size() == 2302696);
  // `unzip -p mlp_et.pt2 '*wrapper.so' | sha256sum`
  CHECK(to_hex(sha256(file->bytes())) == "63e47df0b2a01ebd144e690571b6fe6fc25d6a0a69fe2ddd2232d08fd002a24a");
}

TEST_CASE("pt2: limits, unknown entries and bad archives fail cleanly") {
  PTB_REQUIRE_FIXTURES();
  auto source = ptb::test::fixture("aoti/mlp_et.pt2");
  auto package = Pt2Package::open(source.string());
  REQUIRE(package.ok());

  auto too_big = package->read_entry(kEtStem + "_weights.blob", 3199);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().message.find("mlp_et.pt2: entry '" + kEtStem + "_weights.blob'") != std::string::npos);
  CHECK(too_big.error().message.find("3200") != std::string::npos);

  TempDir dir;
  auto target = dir / "out.so";
  CHECK_FALSE(package->extract_entry_to(kEtStem + ".so", target.string(), 1000).ok());
  CHECK(std::filesystem::is_empty(dir.path()));  // nothing half-written is left

  auto missing = package->read_entry("mlp_et/../../etc/passwd", kNoLimit);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("no such entry") != std::string::npos);

  SUBCASE("truncated") {
    auto copy = dir / "truncated.pt2";
    std::filesystem::copy_file(source, copy);
    std::filesystem::resize_file(copy, 1000000);
    auto opened = Pt2Package::open(copy.string());
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().kind == ErrorKind::Invalid);
    CHECK(opened.error().message.find("truncated.pt2") != std::string::npos);
  }
  SUBCASE("a flipped byte inside the stored library fails its CRC") {
    auto copy = dir / "corrupt.pt2";
    std::filesystem::copy_file(source, copy);
    std::filesystem::permissions(copy, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    ptb::test::flip_byte(copy, 1000000);  // inside the 2.3 MB .wrapper.so, the largest entry
    auto opened = Pt2Package::open(copy.string());
    REQUIRE_MESSAGE(opened.ok(), opened.error().message);
    auto bytes = opened->read_entry(kEtStem + ".so", kNoLimit);
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.error().message.find("corrupt.pt2: entry '" + kEtStem + ".so'") != std::string::npos);
    CHECK(bytes.error().message.find("CRC") != std::string::npos);
    // Other entries still read.
    CHECK(opened->read_entry(kEtStem + "_weights.blob", kNoLimit).ok());
  }
  SUBCASE("not a zip at all") {
    auto path = (dir / "text.pt2").string();
    REQUIRE(write_file_atomically(path, std::string("this is not a zip archive")).ok());
    auto opened = Pt2Package::open(path);
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().message.find("text.pt2: not a readable zip archive") != std::string::npos);
  }
  SUBCASE("missing file is an I/O error") {
    auto opened = Pt2Package::open((dir / "absent.pt2").string());
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().kind == ErrorKind::Io);
  }
}

// Small synthetic packages, written with libzip itself and then patched, for
// the layouts and attacks the real fixtures do not show.
namespace {

struct ZipFile {
  std::string name;
  std::string data;
  bool deflate = false;
};

void write_zip(const std::filesystem::path& path, const std::vector<ZipFile>& files) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  REQUIRE(zip);
  for (const auto& file : files) {
    zip_source_t* source = zip_source_buffer(zip, file.data.data(), file.data.size(), 0);
    REQUIRE(source);
    zip_int64_t index = zip_file_add(zip, file.name.c_str(), source, ZIP_FL_ENC_UTF_8);
    REQUIRE(index >= 0);
    REQUIRE(zip_set_file_compression(zip, static_cast<zip_uint64_t>(index),
                                     file.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0);
  }
  REQUIRE(zip_close(zip) == 0);
}

// Replaces every occurrence of `from` with `to` (same length) in the file.
void patch_bytes(const std::filesystem::path& path, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  std::string bytes = ptb::test::read_text(path);
  size_t count = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1), ++count)
    bytes.replace(at, to.size(), to);
  REQUIRE(count > 0);
  std::filesystem::remove(path);
  REQUIRE(write_file_atomically(path.string(), bytes).ok());
}

}  // namespace

TEST_CASE("pt2: a package without a root folder, with two models and external weights") {
  TempDir dir;
  auto path = dir / "plain.pt2";
  write_zip(path, {
                      {"data/aotinductor/a/h1.wrapper.so", "ELF-a"},
                      {"data/aotinductor/a/h1.wrapper_metadata.json", R"({"AOTI_DEVICE_KEY": "cpu"})"},
                      {"data/aotinductor/a/h1.wrapper.cpp", "// source", true},
                      {"data/aotinductor/a/h1.o", "obj"},
                      {"data/aotinductor/b/k.so", "ELF-b"},
                      {"data/aotinductor/b/k.fatbin", "fb"},
                      {"data/aotinductor/b/k.ptx", ".version 8.0"},
                      {"data/aotinductor/b/sub/nested.cubin", "ignored"},
                      {"data/constants/tensor_0", "c"},
                      {"data/weights/weight_0", "w"},
                  });
  auto package = Pt2Package::open(path.string());
  REQUIRE_MESSAGE(package.ok(), package.error().message);
  CHECK(package->root().empty());
  CHECK(package->archive_format().empty());
  CHECK(package->external_weight_entries() == std::vector<std::string>{"data/constants/tensor_0", "data/weights/weight_0"});
  REQUIRE(package->models().size() == 2);
  const Pt2Model* a = package->find_model("a");
  REQUIRE(a);
  CHECK(a->wrapper_library == "data/aotinductor/a/h1.wrapper.so");
  CHECK(a->object_files == std::vector<std::string>{"data/aotinductor/a/h1.o"});
  CHECK(*a->metadata_value("AOTI_DEVICE_KEY") == "cpu");
  CHECK(a->weights_in_library());
  CHECK(package->find_entry("data/aotinductor/a/h1.wrapper.cpp")->compression_method == ZIP_CM_DEFLATE);
  auto source = package->read_entry("data/aotinductor/a/h1.wrapper.cpp", 100);
  REQUIRE(source.ok());
  CHECK(std::string(source->begin(), source->end()) == "// source");
  const Pt2Model* b = package->find_model("b");
  REQUIRE(b);
  CHECK(b->wrapper_library == "data/aotinductor/b/k.so");
  // Kernel files in subfolders are kept, so that the name check refuses them.
  CHECK(b->kernel_binaries == std::vector<std::string>{"data/aotinductor/b/k.fatbin", "data/aotinductor/b/k.ptx",
                                                       "data/aotinductor/b/sub/nested.cubin"});
  CHECK_FALSE(b->metadata_entry.has_value());
  CHECK(b->metadata.empty());
}

TEST_CASE("pt2: a deflated entry that inflates past its declared size is refused") {
  TempDir dir;
  auto path = dir / "bomb.pt2";
  // 1 MiB of 'A' deflates to about a kilobyte; the sizes are then patched down.
  write_zip(path, {{"p/data/aotinductor/model/x.wrapper.so", std::string(1 << 20, 'A'), true}});
  auto honest = Pt2Package::open(path.string());
  REQUIRE(honest.ok());
  CHECK(honest->entries()[0].size == (1u << 20));
  CHECK(honest->entries()[0].compressed_size < 10000);
  auto refused = honest->read_entry("p/data/aotinductor/model/x.wrapper.so", 4096);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("1048576 bytes uncompressed; the limit is 4096") != std::string::npos);

  // Little-endian 1 MiB (00 00 10 00) becomes 100 in the local and central headers.
  patch_bytes(path, std::string("\x00\x00\x10\x00", 4), std::string("\x64\x00\x00\x00", 4));
  // The archive opens (its directory is consistent: both headers say 100),
  // and reading the entry stops where it inflates past what they declare.
  auto lying = Pt2Package::open(path.string());
  REQUIRE_MESSAGE(lying.ok(), lying.error().message);
  CHECK(lying->entries()[0].size == 100);
  auto bytes = lying->read_entry("p/data/aotinductor/model/x.wrapper.so", 4096);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().message.find("bomb.pt2: entry 'p/data/aotinductor/model/x.wrapper.so'") != std::string::npos);
}

TEST_CASE("pt2: duplicate names, ambiguous libraries and bad metadata are refused") {
  TempDir dir;
  SUBCASE("two entries with one name") {
    auto path = dir / "dup.pt2";
    write_zip(path, {{"p/data/aotinductor/model/x.so", "one"}, {"p/data/aotinductor/model/y.so", "two"}});
    patch_bytes(path, "model/y.so", "model/x.so");
    auto package = Pt2Package::open(path.string());
    REQUIRE_FALSE(package.ok());
    CHECK(package.error().message.find("dup.pt2: not a readable zip archive: two entries share one name") !=
          std::string::npos);
  }
  SUBCASE("two libraries, neither a wrapper") {
    auto path = dir / "two.pt2";
    write_zip(path, {{"p/data/aotinductor/model/x.so", "one"}, {"p/data/aotinductor/model/y.so", "two"}});
    auto package = Pt2Package::open(path.string());
    REQUIRE_FALSE(package.ok());
    CHECK(package.error().message.find("model 'model': 2 shared library entries") != std::string::npos);
  }
  SUBCASE("metadata value that is not a string") {
    auto path = dir / "meta.pt2";
    write_zip(path, {{"p/data/aotinductor/model/x.wrapper.so", "lib"},
                     {"p/data/aotinductor/model/x.wrapper_metadata.json", R"({"AOTI_COMPUTE_CAPABILITY": 90})"}});
    auto package = Pt2Package::open(path.string());
    REQUIRE_FALSE(package.ok());
    CHECK(package.error().message.find("x.wrapper_metadata.json': key 'AOTI_COMPUTE_CAPABILITY': value is number") !=
          std::string::npos);
  }
  SUBCASE("metadata that is not JSON") {
    auto path = dir / "meta2.pt2";
    write_zip(path, {{"p/data/aotinductor/model/x.wrapper.so", "lib"},
                     {"p/data/aotinductor/model/x.wrapper_metadata.json", "{not json"}});
    auto package = Pt2Package::open(path.string());
    REQUIRE_FALSE(package.ok());
    CHECK(package.error().message.find("not a JSON object") != std::string::npos);
  }
}
