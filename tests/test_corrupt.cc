// Bad input to the readers: every truncation of real files, flipped bytes,
// wrong magic, offsets past the end, sizes that overflow, flatbuffers that
// fail verification, and indices that point nowhere. Each must give one line
// naming the file, never a crash (the sanitizer build runs these too).
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>

#include "../apps/report.h"
#include "fixture_dump.h"
#include "flatbuffer_layout.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"

using namespace ptb;
using namespace ptb::test;

namespace {

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  REQUIRE(write_file_atomically(path.string(), Bytes(bytes.data(), bytes.size())).ok());
}


void check_one_line(const Error& error, const fs::path& path) {
  CHECK(error.kind == ErrorKind::Invalid);
  CHECK(error.message.find('\n') == std::string::npos);
  CHECK_MESSAGE(error.message.rfind(path.string() + ": ", 0) == 0, error.message);
}

// Everything a caller may touch after a successful open, so that a corrupt
// file that still opens is walked completely.
void walk(const PteFile& pte) {
  for (const auto& method : describe_methods(pte)) (void)method;
  for (size_t s = 0; s < pte.segments().size(); ++s) (void)sha256(pte.segment_bytes(s));
  for (const auto& entry : pte.named_data()) (void)pte.named_data_bytes(entry);
  auto methods = describe_methods(pte);
  for (size_t p = 0; p < methods.size(); ++p) {
    for (size_t d = 0; d < methods[p].delegates.size(); ++d) {
      (void)decode_cuda_payload(pte.delegate_payload(p, d), methods[p].name, "ctx");
    }
  }
}

void walk(const PtdFile& ptd) {
  for (const auto& entry : ptd.entries()) (void)sha256(ptd.bytes(entry));
}

void walk(const BpteFile& bpte) { walk(bpte.program()); }

// What inspect shows of a file that opened, as the CLI would print it.
void inspect_walk(const fs::path& path) {
  InspectOptions options;
  options.sha256 = true;
  auto inspected = inspect_path(path.string(), options);
  if (!inspected.ok()) FAIL(inspected.error().message);
  CHECK_FALSE(ptb::app::to_json(*inspected).dump().empty());
}

template <class Reader>
void open_and_walk(const fs::path& path) {
  auto opened = Reader::open(path.string());
  if (opened.ok()) {
    walk(*opened);
    inspect_walk(path);
  } else {
    check_one_line(opened.error(), path);
  }
}

// Truncating downwards keeps the prefix, so one file serves every length.
template <class Reader>
void every_prefix_fails_cleanly(const fs::path& source) {
  TempDir dir;
  auto path = dir / source.filename().string();
  auto bytes = read_bytes(source);
  write_bytes(path, bytes);
  for (size_t length = bytes.size(); length-- > 0;) {
    REQUIRE(::truncate(path.c_str(), static_cast<off_t>(length)) == 0);
    auto opened = Reader::open(path.string());
    CAPTURE(length);
    REQUIRE_FALSE(opened.ok());
    check_one_line(opened.error(), path);
  }
}

// Flips each byte in [0, limit) in turn with each pattern and opens the result.
template <class Reader>
void flipped_bytes_never_crash(const fs::path& source, size_t limit,
                               std::initializer_list<uint8_t> patterns = {0xff, 0x01}) {
  TempDir dir;
  auto path = dir / source.filename().string();
  auto bytes = read_bytes(source);
  write_bytes(path, bytes);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  for (uint8_t pattern : patterns) {
    for (size_t position = 0; position < std::min(limit, bytes.size()); ++position) {
      uint8_t flipped = bytes[position] ^ pattern;
      REQUIRE(::pwrite(fd, &flipped, 1, static_cast<off_t>(position)) == 1);
      CAPTURE(position);
      open_and_walk<Reader>(path);
      REQUIRE(::pwrite(fd, &bytes[position], 1, static_cast<off_t>(position)) == 1);
    }
  }
  ::close(fd);
}

template <class Reader>
Error open_error(const fs::path& path, const std::vector<uint8_t>& bytes) {
  write_bytes(path, bytes);
  auto opened = Reader::open(path.string());
  if (opened.ok()) FAIL("expected " << path << " to be refused");
  check_one_line(opened.error(), path);
  return opened.take_error();
}

// A finished flatbuffer with `header` (already padded) spliced in after the
// identifier, as ExecuTorch's serializers do, then zeros up to `base` and
// `segments`.
std::vector<uint8_t> splice(const flatbuffers::FlatBufferBuilder& builder, std::vector<uint8_t> header, uint64_t base,
                            Bytes segments) {
  REQUIRE(builder.GetSize() + header.size() <= base);
  return splice_flatbuffer(builder.GetBufferPointer(), builder.GetSize(), header, base, segments);
}

// sm80/model.pte rebuilt after `edit` changed its program.
std::vector<uint8_t> edited_cuda_pte(const std::function<void(fb::ProgramT&)>& edit) {
  auto original = read_bytes(fixture("cuda/sm80/model.pte"));
  std::unique_ptr<fb::ProgramT> program(fb::GetProgram(original.data())->UnPack());
  edit(*program);
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Program::Pack(builder, program.get()), fb::ProgramIdentifier());
  const uint64_t old_base = 1792;
  uint64_t program_size = builder.GetSize() + 32;
  uint64_t base = (program_size + 127) / 128 * 128;
  std::vector<uint8_t> header(32, 0);
  std::memcpy(header.data(), "eh00", 4);
  put_u32(header, 4, 32);
  put_u64(header, 8, program_size);
  put_u64(header, 16, base);
  put_u64(header, 24, original.size() - old_base);
  return splice(builder, header, base, Bytes(original.data() + old_base, original.size() - old_base));
}

// sm80/aoti_cuda_blob.ptd rebuilt after `edit` changed its FlatTensor.
std::vector<uint8_t> edited_cuda_ptd(const std::function<void(fb::ptd::FlatTensorT&)>& edit) {
  auto original = read_bytes(fixture("cuda/sm80/aoti_cuda_blob.ptd"));
  std::unique_ptr<fb::ptd::FlatTensorT> tensor(fb::ptd::GetFlatTensor(original.data())->UnPack());
  edit(*tensor);
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::ptd::FlatTensor::Pack(builder, tensor.get()), fb::ptd::FlatTensorIdentifier());
  const uint64_t old_base = 384;
  uint64_t base = (builder.GetSize() + 48 + 127) / 128 * 128;
  std::vector<uint8_t> header = ptd_header(builder.GetSize(), base, original.size() - old_base);
  return splice(builder, header, base, Bytes(original.data() + old_base, original.size() - old_base));
}

}  // namespace

TEST_CASE("corrupt: every prefix of add.pte, sm80/model.pte and its .ptd is refused cleanly") {
  PTB_REQUIRE_FIXTURES();
  every_prefix_fails_cleanly<PteFile>(fixture("executorch/add.pte"));
  every_prefix_fails_cleanly<PteFile>(fixture("cuda/sm80/model.pte"));
  every_prefix_fails_cleanly<PtdFile>(fixture("cuda/sm80/aoti_cuda_blob.ptd"));
  every_prefix_fails_cleanly<BpteFile>(fixture("executorch/bundled_program.bpte"));
}

TEST_CASE("corrupt: flipped bytes give a clean error or a file that can be walked") {
  PTB_REQUIRE_FIXTURES();
  flipped_bytes_never_crash<PteFile>(fixture("executorch/add.pte"), SIZE_MAX);
  // The program, the header and the delegate payload; past them lie library bytes.
  flipped_bytes_never_crash<PteFile>(fixture("cuda/sm80/model.pte"), 2176, {0xff});
  flipped_bytes_never_crash<PteFile>(fixture("executorch/cadence_conv2d.pte"), 2432, {0x01});
  flipped_bytes_never_crash<PtdFile>(fixture("cuda/sm80/aoti_cuda_blob.ptd"), 384);
  flipped_bytes_never_crash<BpteFile>(fixture("executorch/bundled_program.bpte"), SIZE_MAX);
}

TEST_CASE("corrupt: wrong magic") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto pte = read_bytes(fixture("cuda/sm80/model.pte"));
  pte[4] = 'X';
  auto error = open_error<PteFile>(dir / "model.pte", pte);
  CHECK(error.message == (dir / "model.pte").string() +
                             ": file identifier at offset 4 is 'XT12'; expected 'ET12' (an ExecuTorch program)");

  auto ptd = read_bytes(fixture("cuda/sm80/aoti_cuda_blob.ptd"));
  ptd[7] = 0;
  error = open_error<PtdFile>(dir / "w.ptd", ptd);
  CHECK(error.message == (dir / "w.ptd").string() +
                             ": file identifier at offset 4 is 'FT0\\x00'; expected 'FT01' (an ExecuTorch data file)");
  ptd[7] = '1';
  ptd[8] = 'G';
  error = open_error<PtdFile>(dir / "w.ptd", ptd);
  CHECK(error.message == (dir / "w.ptd").string() + ": header magic at offset 8 is 'GH01'; expected 'FH01'");

  // A .ptd given where a program is expected is named for what it is not.
  error = open_error<PteFile>(dir / "x.pte", read_bytes(fixture("cuda/sm80/aoti_cuda_blob.ptd")));
  CHECK(error.message.find("is 'FT01'; expected 'ET12'") != std::string::npos);
  error = open_error<PteFile>(dir / "empty.pte", {});
  CHECK(error.message.find("0 bytes is too short") != std::string::npos);
}

TEST_CASE("corrupt: extended header offsets past the end and sizes that overflow") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto path = dir / "model.pte";
  const auto original = read_bytes(fixture("cuda/sm80/model.pte"));
  auto bytes = original;
  put_u64(bytes, 16, original.size() + 1);  // program_size
  CHECK(open_error<PteFile>(path, bytes).message.find("program_size 28889 does not fit the file") != std::string::npos);

  bytes = original;
  put_u64(bytes, 24, original.size() + 100);  // segment_base_offset
  CHECK(open_error<PteFile>(path, bytes).message.find("segment_base_offset 28988 lies outside the file") !=
        std::string::npos);

  bytes = original;
  put_u64(bytes, 32, UINT64_MAX);  // segment_data_size
  CHECK(open_error<PteFile>(path, bytes).message.find("18446744073709551615 bytes of segments start at offset 1792") !=
        std::string::npos);

  bytes = original;
  put_u64(bytes, 32, 27095);  // one byte short: the last segment no longer fits
  CHECK(open_error<PteFile>(path, bytes).message.find("segment 2 (offset 384, size 26712, from base 1792) extends past") !=
        std::string::npos);

  bytes = original;
  put_u32(bytes, 12, 8);  // header length
  CHECK(open_error<PteFile>(path, bytes).message.find("extended header length 8") != std::string::npos);

  auto ptd_path = dir / "w.ptd";
  const auto ptd = read_bytes(fixture("cuda/sm80/aoti_cuda_blob.ptd"));
  bytes = ptd;
  put_u64(bytes, 24, UINT64_MAX - 20);  // flatbuffer_size: offset + size overflows
  CHECK(open_error<PtdFile>(ptd_path, bytes).message.find("do not fit the file") != std::string::npos);
  bytes = ptd;
  put_u64(bytes, 40, UINT64_MAX);  // segment_data_size
  CHECK(open_error<PtdFile>(ptd_path, bytes).message.find("bytes of segments start at offset 384") != std::string::npos);
  bytes = ptd;
  put_u64(bytes, 32, 100);  // segment_base_offset inside the flatbuffer
  CHECK(open_error<PtdFile>(ptd_path, bytes).message.find("expected them after the flatbuffer") != std::string::npos);
}

TEST_CASE("corrupt: a flatbuffer that fails verification") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bytes = read_bytes(fixture("executorch/add.pte"));
  put_u32(bytes, 0, 0xfffffff0u);  // root table far outside the buffer
  auto error = open_error<PteFile>(dir / "add.pte", bytes);
  CHECK(error.message == (dir / "add.pte").string() +
                             ": program flatbuffer (728 bytes from offset 0) fails FlatBuffers verification; expected a "
                             "valid ExecuTorch Program");
  auto ptd = read_bytes(fixture("cuda/sm80/aoti_cuda_blob.ptd"));
  put_u32(ptd, 0, 0xfffffff0u);
  CHECK(open_error<PtdFile>(dir / "w.ptd", ptd).message.find("fails FlatBuffers verification") != std::string::npos);
}

TEST_CASE("corrupt: a .ptd whose named data points at a missing segment") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bytes = edited_cuda_ptd([](fb::ptd::FlatTensorT& tensor) { tensor.named_data[1]->segment_index = 7; });
  auto error = open_error<PtdFile>(dir / "w.ptd", bytes);
  CHECK(error.message == (dir / "w.ptd").string() +
                             ": key 'cuda_fqn_weight:cuda:layer.bias' refers to segment 7, but the file has 2 segments");
  // The rebuilt file itself is sound: only the index was wrong.
  auto sound = edited_cuda_ptd([](fb::ptd::FlatTensorT&) {});
  write_bytes(dir / "ok.ptd", sound);
  auto ptd = PtdFile::open((dir / "ok.ptd").string());
  REQUIRE_MESSAGE(ptd.ok(), error_of(ptd));
  CHECK(sha256_hex(ptd->bytes(ptd->entries()[1])) == "bb29aeba2dbcd323cb82b32a19bc4d43a0764ac6db503b9c1fe54bfa5669d06f");

  bytes = edited_cuda_ptd([](fb::ptd::FlatTensorT& tensor) { tensor.segments[1]->offset = 1u << 20; });
  CHECK(open_error<PtdFile>(dir / "w.ptd", bytes).message.find("segment 1 (offset 1048576, size 256) extends past") !=
        std::string::npos);
}

TEST_CASE("corrupt: a key listed twice, with different bytes, is refused in a .ptd and in a .pte's named data") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto bytes = edited_cuda_ptd([](fb::ptd::FlatTensorT& tensor) {
    REQUIRE(tensor.named_data.size() >= 2);
    REQUIRE(tensor.named_data[0]->segment_index != tensor.named_data[1]->segment_index);
    tensor.named_data[1]->key = tensor.named_data[0]->key;
  });
  auto error = open_error<PtdFile>(dir / "w.ptd", bytes);
  CHECK_MESSAGE(error.message.find("appears twice (named data entries 0 and 1); expected each key once") != std::string::npos,
                error.message);

  auto pte = edited_cuda_pte([](fb::ProgramT& program) {
    REQUIRE(program.named_data.size() >= 1);
    auto copy = std::make_unique<fb::NamedDataT>(*program.named_data[0]);
    program.named_data.push_back(std::move(copy));
  });
  auto pte_error = open_error<PteFile>(dir / "w.pte", pte);
  CHECK_MESSAGE(pte_error.message.find("' appears twice (entries 0 and ") != std::string::npos, pte_error.message);
}

TEST_CASE("corrupt: indices in a program that point nowhere") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto path = dir / "model.pte";
  auto sound = edited_cuda_pte([](fb::ProgramT&) {});
  write_bytes(path, sound);
  auto pte = PteFile::open(path.string());
  REQUIRE_MESSAGE(pte.ok(), error_of(pte));
  CHECK(pte->delegate_payload(0, 0).size() == 312);

  struct Case {
    const char* what;
    std::function<void(fb::ProgramT&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"delegate segment", [](fb::ProgramT& p) { p.execution_plan[0]->delegates[0]->processed->index = 9; },
       ": method 'forward': delegate 0: segment index 9 is out of range; expected an index into the 3 segments"},
      {"inline delegate data",
       [](fb::ProgramT& p) { p.execution_plan[0]->delegates[0]->processed->location = fb::DataLocation::INLINE; },
       ": method 'forward': delegate 0: inline data index 1 is out of range; expected an index into the 0 entries of "
       "backend_delegate_data"},
      {"named data segment", [](fb::ProgramT& p) { p.named_data[0]->segment_index = 3; },
       ": named data '52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3_so_blob' refers to segment 3, "
       "but the program has 3 segments"},
      {"method input", [](fb::ProgramT& p) { p.execution_plan[0]->inputs[0] = 4; },
       ": method 'forward': inputs[0] 4 is out of range; expected an index into the 4 values"},
      {"method output", [](fb::ProgramT& p) { p.execution_plan[0]->outputs[0] = -1; },
       ": method 'forward': outputs[0] -1 is out of range; expected an index into the 4 values"},
      {"operator index",
       [](fb::ProgramT& p) { p.execution_plan[0]->chains[0]->instructions[2]->instr_args.AsKernelCall()->op_index = 2; },
       ": method 'forward': chain 0 instruction 2: op_index 2 is out of range; expected an index into the 2 operators"},
      {"delegate index",
       [](fb::ProgramT& p) {
         p.execution_plan[0]->chains[0]->instructions[1]->instr_args.AsDelegateCall()->delegate_index = 1;
       },
       ": method 'forward': chain 0 instruction 1: delegate_index 1 is out of range; expected an index into the 1 "
       "delegates"},
      {"kernel argument",
       [](fb::ProgramT& p) { p.execution_plan[0]->chains[0]->instructions[0]->instr_args.AsKernelCall()->args[1] = 99; },
       ": method 'forward': chain 0 instruction 0: args[1] 99 is out of range; expected an index into the 4 values"},
      {"constant segment", [](fb::ProgramT& p) { p.constant_segment->segment_index = 5; },
       ": constant_segment: segment_index 5 is out of range; expected an index into the 3 segments"},
      {"constant offset", [](fb::ProgramT& p) { p.constant_segment->offsets[0] = 1; },
       ": constant_segment: offsets[0] 1 lies past the end of segment 0; expected at most 0"},
      {"constant tensor",
       [](fb::ProgramT& p) {
         auto* tensor = p.execution_plan[0]->values[0]->val.AsTensor();
         tensor->allocation_info.reset();
         tensor->data_buffer_idx = 1;
       },
       ": method 'forward': value 0: data_buffer_idx 1 is out of range; expected an index into the 1 constant buffers"},
      {"mutable data segment",
       [](fb::ProgramT& p) {
         auto sub = std::make_unique<fb::SubsegmentOffsetsT>();
         sub->segment_index = 4;
         sub->offsets = {0};
         p.mutable_data_segments.push_back(std::move(sub));
       },
       ": mutable_data_segments[0]: segment_index 4 is out of range; expected an index into the 3 segments"},
      {"buffer device", [](fb::ProgramT& p) { p.execution_plan[0]->non_const_buffer_device[2]->buffer_idx = 3; },
       ": method 'forward': non_const_buffer_device[2].buffer_idx 3 is out of range; expected an index into the 3 "
       "non-constant buffers"},
      {"dynamism",
       [](fb::ProgramT& p) {
         p.execution_plan[0]->values[1]->val.AsTensor()->shape_dynamism = static_cast<fb::TensorShapeDynamism>(7);
       },
       ": method 'forward': value 1: shape_dynamism 7 is unknown; expected 0 (static), 1 (dynamic bound) or 2 (dynamic "
       "unbound)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto error = open_error<PteFile>(path, edited_cuda_pte(c.edit));
    CHECK(error.message == path.string() + c.message);
  }
}

TEST_CASE("corrupt: keys that are not UTF-8 are shown, not fatal") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  auto path = dir / "w.ptd";
  write_bytes(path, edited_cuda_ptd([](fb::ptd::FlatTensorT& tensor) { tensor.named_data[0]->key = "bad\xff\x1b[2Jkey"; }));
  auto json_result = run_cli("inspect --json " + quote(path));
  REQUIRE(json_result.exit_code == 0);
  auto document = nlohmann::json::parse(json_result.out);
  CHECK(document["files"][0]["named_data"][0]["key"] == "bad\xef\xbf\xbd\x1b[2Jkey");
  auto text_result = run_cli("inspect " + quote(path));
  REQUIRE(text_result.exit_code == 0);
  // The escape byte is shown escaped, never sent to the terminal.
  CHECK(text_result.out.find("bad\xff\\x1b[2Jkey") != std::string::npos);
  CHECK(text_result.out.find('\x1b') == std::string::npos);
}
