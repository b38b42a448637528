// The .pte and .ptd writers against three readers: ours (PteFile, PtdFile),
// flatc decoding the flatbuffer with the schema (an independent reader), and
// the numbers in ExecuTorch's own files, re-serialized from their contents.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/base/sha256.h"
#include "support.h"

using namespace ptb;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

bool have_flatc() { return std::system("command -v flatc >/dev/null 2>&1") == 0; }

// flatc's own JSON reading of `file` against `schema` (program.fbs or
// flat_tensor.fbs); null if flatc refuses the file.
nlohmann::json flatc_json(const fs::path& file, const std::string& schema, const TempDir& scratch) {
  auto out_dir = scratch / ("flatc-" + file.filename().string());
  fs::create_directories(out_dir);
  std::string schemas = std::string(PTB_SOURCE_DIR) + "/schemas";
  std::string command = "flatc --raw-binary -t --strict-json -I " + ptb::test::quote(schemas) + " -o " +
                        ptb::test::quote(out_dir) + " " + ptb::test::quote(schemas + "/" + schema) + " -- " +
                        ptb::test::quote(file) + " 2>&1";
  if (std::system(command.c_str()) != 0) return nullptr;
  auto json_path = out_dir / (file.stem().string() + ".json");
  return nlohmann::json::parse(ptb::test::read_text(json_path), nullptr, false);
}

std::vector<SegmentSource> segments_of(const PteFile& pte) {
  std::vector<SegmentSource> out;
  for (const auto& segment : pte.segments())
    out.push_back(SegmentSource::file_range(pte.file(), segment.file_offset, segment.size));
  return out;
}

std::unique_ptr<fb::ProgramT> unpack(const PteFile& pte) { return std::unique_ptr<fb::ProgramT>(pte.program().UnPack()); }

std::string hex_of(Bytes bytes) { return to_hex(sha256(bytes)); }

}  // namespace

TEST_CASE("pte writer: ExecuTorch's sm80 program re-serialized keeps ExecuTorch's layout") {
  PTB_REQUIRE_FIXTURES();
  auto original = PteFile::open(ptb::test::fixture("cuda/sm80/model.pte").string());
  REQUIRE(original.ok());
  // ExecuTorch's numbers for this file (dump.json): program 1672 bytes,
  // base 1792, segments at 0 (0 bytes), 0 (312), 384 (26712), 27096 bytes.
  REQUIRE(original->extended_header().has_value());
  CHECK(original->extended_header()->program_size == 1672);
  CHECK(original->extended_header()->segment_base_offset == 1792);
  CHECK(original->extended_header()->segment_data_size == 27096);
  CHECK(align_up(1672, 128) == 1792);  // the base rule we apply is ExecuTorch's

  TempDir dir;
  auto path = (dir / "model.pte").string();
  auto program = unpack(*original);
  auto layout = write_pte_file(path, *program, segments_of(*original));
  REQUIRE(layout.ok());
  CHECK(layout->header_length == 32);
  CHECK(layout->segment_offsets == std::vector<uint64_t>{0, 0, 384});
  CHECK(layout->segment_data_size == 27096);
  CHECK(layout->segment_base_offset == align_up(layout->program_size, 128));
  CHECK(layout->file_size == fs::file_size(path));

  auto ours = PteFile::open(path);
  REQUIRE(ours.ok());
  REQUIRE(ours->extended_header().has_value());
  CHECK(ours->extended_header()->length == 32);
  CHECK(ours->extended_header()->program_size == layout->program_size);
  CHECK(ours->extended_header()->segment_base_offset == layout->segment_base_offset);
  CHECK(ours->extended_header()->segment_data_size == 27096);
  REQUIRE(ours->segments().size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(ours->segments()[i].offset == original->segments()[i].offset);
    CHECK(ours->segments()[i].size == original->segments()[i].size);
    CHECK(hex_of(ours->segment_bytes(i)) == hex_of(original->segment_bytes(i)));
  }
  const char* so_key = "52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3_so_blob";
  auto* so = ours->find_named_data(so_key);
  REQUIRE(so != nullptr);
  CHECK(hex_of(ours->named_data_bytes(*so)) == "52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3");
  CHECK(hex_of(ours->delegate_payload(0, 0)) == "b242258fa327a241548b08343fd376f4d48c96688deddc875e0a946a601bb4b3");

  if (!have_flatc()) {
    ptb::test::skip("flatc not found: the independent decoding of the written .pte is not checked");
    return;
  }
  auto theirs_json = flatc_json(ptb::test::fixture("cuda/sm80/model.pte"), "program.fbs", dir);
  auto ours_json = flatc_json(path, "program.fbs", dir);
  REQUIRE(!theirs_json.is_null());
  REQUIRE(!ours_json.is_null());
  CHECK(ours_json == theirs_json);
  CHECK(ours_json["segments"][2]["offset"] == 384);
}

TEST_CASE("pte writer: a program without segment bytes is a bare flatbuffer, as ExecuTorch writes add.pte") {
  PTB_REQUIRE_FIXTURES();
  auto original = PteFile::open(ptb::test::fixture("executorch/add.pte").string());
  REQUIRE(original.ok());
  CHECK_FALSE(original->extended_header().has_value());
  // One empty constant segment and no header: ExecuTorch adds the header
  // only when there are segment bytes.
  REQUIRE(original->segments().size() == 1);
  CHECK(original->segments()[0].size == 0);

  TempDir dir;
  auto path = (dir / "add.pte").string();
  auto program = unpack(*original);
  auto layout = write_pte_file(path, *program, segments_of(*original));
  REQUIRE(layout.ok());
  CHECK(layout->header_length == 0);
  CHECK(layout->file_size == original->bytes().size());
  CHECK(layout->segment_base_offset == 0);
  CHECK(layout->file_size == fs::file_size(path));
  auto ours = PteFile::open(path);
  REQUIRE(ours.ok());
  CHECK_FALSE(ours->extended_header().has_value());
  auto methods = describe_methods(*ours);
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].name == "forward");
  if (!have_flatc()) return ptb::test::skip("flatc not found");
  CHECK(flatc_json(path, "program.fbs", dir) == flatc_json(ptb::test::fixture("executorch/add.pte"), "program.fbs", dir));
}

TEST_CASE("pte writer: segments are aligned to lcm(128, their own alignment) and checked") {
  std::vector<uint8_t> small(10, 0xaa), aligned(5, 0xbb);
  fb::ProgramT program;
  program.version = 0;
  auto plan = std::make_unique<fb::ExecutionPlanT>();
  plan->name = "forward";
  program.execution_plan.push_back(std::move(plan));
  for (const char* key : {"a", "b"}) {
    auto entry = std::make_unique<fb::NamedDataT>();
    entry->key = key;
    entry->segment_index = key[0] == 'a' ? 0 : 1;
    program.named_data.push_back(std::move(entry));
  }
  TempDir dir;
  auto path = (dir / "p.pte").string();
  auto layout = write_pte_file(path, program, {SegmentSource::memory(small), SegmentSource::memory(aligned, 512)});
  REQUIRE(layout.ok());
  CHECK(layout->segment_offsets == std::vector<uint64_t>{0, 512});
  CHECK(layout->segment_data_size == 517);
  auto ours = PteFile::open(path);
  REQUIRE(ours.ok());
  auto* b = ours->find_named_data("b");
  REQUIRE(b != nullptr);
  CHECK(ours->named_data_bytes(*b).size() == 5);
  CHECK(ours->named_data_bytes(*b)[0] == 0xbb);
  CHECK((ours->extended_header()->segment_base_offset + 512) % 512 == layout->segment_base_offset % 512);

  program.named_data[1]->segment_index = 7;
  auto bad = write_pte_file((dir / "bad.pte").string(), program, {SegmentSource::memory(small)});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("named data \"b\" refers to segment 7; expected an index below 1") != std::string::npos);
  program.named_data[1]->segment_index = 0;
  program.named_data[1]->key = "a";
  auto twice = write_pte_file((dir / "bad.pte").string(), program, {SegmentSource::memory(small)});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("\"a\" appears twice") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad.pte"));
}

TEST_CASE("ptd writer: ExecuTorch's sm80 data file re-serialized has ExecuTorch's header and offsets") {
  PTB_REQUIRE_FIXTURES();
  auto fixture = ptb::test::fixture("cuda/sm80/aoti_cuda_blob.ptd");
  auto original = PtdFile::open(fixture.string());
  REQUIRE(original.ok());
  CHECK(original->header().flatbuffer_offset == 48);
  CHECK(original->header().segment_base_offset == 384);

  PtdContents contents;
  for (const auto& entry : original->entries()) {
    contents.add(entry.key, SegmentSource::file_range(original->file(), entry.file_offset, entry.size), entry.layout);
  }
  TempDir dir;
  auto path = (dir / "encoder.ptd").string();
  auto layout = write_ptd_file(path, contents);
  REQUIRE(layout.ok());
  // Where ExecuTorch's rules fix the numbers, they are ExecuTorch's.
  CHECK(layout->header.length == 40);
  CHECK(layout->header.flatbuffer_offset == 48);
  CHECK(layout->header.segment_base_offset == align_up(48 + layout->header.flatbuffer_size, 128));
  CHECK(layout->header.segment_data_size == 8448);
  CHECK(layout->segment_offsets == std::vector<uint64_t>{0, 8192});
  CHECK(layout->file_size == fs::file_size(path));

  auto ours = PtdFile::open(path);
  REQUIRE(ours.ok());
  CHECK(ours->header().flatbuffer_offset == 48);
  CHECK(ours->header().segment_data_size == 8448);
  REQUIRE(ours->entries().size() == 2);
  CHECK(ours->entries()[0].key == "cuda_fqn_weight:cuda:layer.weight");
  CHECK(hex_of(ours->bytes(ours->entries()[0])) == "742328b3fd2547ab84d2d614cae32d025ed5890cb49af6f4db43cce15b3db5fc");
  CHECK(hex_of(ours->bytes(ours->entries()[1])) == "bb29aeba2dbcd323cb82b32a19bc4d43a0764ac6db503b9c1fe54bfa5669d06f");
  // The segment data, padding included, is byte for byte ExecuTorch's.
  auto theirs_file = MappedFile::open(fixture.string());
  auto ours_file = MappedFile::open(path);
  REQUIRE(theirs_file.ok());
  REQUIRE(ours_file.ok());
  CHECK(hex_of(theirs_file->bytes().subspan(384)) ==
        hex_of(ours_file->bytes().subspan(ours->header().segment_base_offset)));

  if (!have_flatc()) return ptb::test::skip("flatc not found");
  CHECK(flatc_json(path, "flat_tensor.fbs", dir) == flatc_json(fixture, "flat_tensor.fbs", dir));
}

TEST_CASE("ptd writer: tensor layouts, shared segments, and errors") {
  std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  Bytes raw(reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float));
  PtdContents contents;
  TensorLayout layout{6, {2, 3}, {0, 1}};  // float32 [2, 3]
  uint32_t index = contents.add("inputs.0", SegmentSource::memory(raw), layout);
  contents.entries.push_back({"alias", index, std::nullopt});
  contents.add("other", SegmentSource::memory(raw.subspan(0, 4), 256));

  TempDir dir;
  auto path = (dir / "t.ptd").string();
  auto written = write_ptd_file(path, contents);
  REQUIRE(written.ok());
  CHECK(written->segment_offsets == std::vector<uint64_t>{0, 256});
  auto ours = PtdFile::open(path);
  REQUIRE(ours.ok());
  auto* entry = ours->find("inputs.0");
  REQUIRE(entry != nullptr);
  REQUIRE(entry->layout.has_value());
  CHECK(entry->layout->scalar_type == 6);
  CHECK(entry->layout->sizes == std::vector<int32_t>{2, 3});
  CHECK(ours->find("alias")->segment_index == entry->segment_index);
  CHECK(ours->bytes(*ours->find("alias"))[4] == raw[4]);

  if (have_flatc()) {
    auto json = flatc_json(path, "flat_tensor.fbs", dir);
    REQUIRE(!json.is_null());
    CHECK(json["named_data"][0]["tensor_layout"]["scalar_type"] == "FLOAT");
    CHECK(json["named_data"][0]["tensor_layout"]["sizes"] == nlohmann::json::array({2, 3}));
    CHECK(json["segments"][1]["offset"] == 256);
  }

  PtdContents duplicate;
  duplicate.add("k", SegmentSource::memory(raw));
  duplicate.add("k", SegmentSource::memory(raw));
  auto refused = write_ptd_file((dir / "dup.ptd").string(), duplicate);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("key \"k\" appears twice") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "dup.ptd"));
}

TEST_CASE("segment sources: file ranges are checked and copied with progress") {
  TempDir dir;
  auto source_path = (dir / "blob.bin").string();
  std::string text(1000, 'x');
  text[500] = 'y';
  REQUIRE(write_file_atomically(source_path, text).ok());
  auto source = MappedFile::open(source_path);
  REQUIRE(source.ok());

  PtdContents contents;
  contents.add("mid", SegmentSource::file_range(*source, 400, 200));
  uint64_t last_done = 0, last_total = 0;
  std::string last_what;
  auto out = AtomicOutput::create((dir / "p.ptd").string());
  REQUIRE(out.ok());
  auto written = write_ptd(*out, contents, {}, [&](uint64_t done, uint64_t total, const std::string& what) {
    last_done = done;
    last_total = total;
    last_what = what;
  });
  REQUIRE(written.ok());
  CHECK(last_total == written->file_size);
  CHECK(last_done == written->file_size);
  CHECK(last_what == "writing " + (dir / "p.ptd").string());
  REQUIRE(out->commit().ok());
  auto ptd = PtdFile::open((dir / "p.ptd").string());
  REQUIRE(ptd.ok());
  CHECK(ptd->bytes(*ptd->find("mid"))[100] == 'y');

  PtdContents past;
  past.add("past", SegmentSource::file_range(*source, 900, 200));
  auto refused = write_ptd_file((dir / "past.ptd").string(), past);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("blob.bin: range at offset 900 with size 200 extends past the end") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "past.ptd"));

  auto digest = sha256_file(source_path);
  REQUIRE(digest.ok());
  CHECK(*digest == to_hex(sha256(source->bytes())));
}
