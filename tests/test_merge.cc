// `merge` against ExecuTorch's own merge: its verdict on the 11 combinations
// of merge_matrix.json (with the two documented differences), the meaning of
// its output for sm80 + sm90 + sm120 + the PTX fallback, and its provenance
// table; then the rules the fixtures do not reach, on exports made from the
// real program with ptbundle's writers.
#include <flatbuffers/flatbuffers.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "fixture_dump.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/export/export.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/merge/merge.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/cuda/run_part.h"
#include "support.h"
#include "variant_exports.h"
#include "ptbundle/fb/program_generated.h"

using namespace ptb;
using ptb::test::error_of;
using ptb::test::fixture;
using ptb::test::read_bytes;
using ptb::test::ExportSpec;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

MergeSource source_of(const std::string& folder) {
  fs::path dir = fixture("cuda/" + folder);
  MergeSource source{(dir / "model.pte").string(), ""};
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".ptd") source.ptd_path = entry.path().string();
  }
  return source;
}

MergeRequest request_for(const std::vector<std::string>& inputs, const std::optional<std::string>& fallback,
                         const TempDir& out) {
  MergeRequest request;
  for (const auto& input : inputs) request.inputs.push_back(source_of(input));
  if (fallback) request.fallback = source_of(*fallback);
  request.output_pte = (out / "merged.pte").string();
  request.output_ptd = (out / "merged.ptd").string();
  return request;
}

bool folder_empty(const TempDir& dir) { return fs::is_empty(dir.path()); }

// The CUDA payload and compile spec keys of the first CUDA delegate.
struct CudaView {
  CudaPayload payload;
  std::vector<std::string> spec_keys;
};

CudaView cuda_view(const PteFile& pte) {
  for (const MethodInfo& method : describe_methods(pte)) {
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      if (method.delegates[d].id != "CudaBackend") continue;
      CudaView view;
      for (const auto& spec : method.delegates[d].compile_specs) view.spec_keys.push_back(spec.key);
      size_t plan = 0;
      for (size_t p = 0; p < pte.program().execution_plan()->size(); ++p) {
        if (pte.program().execution_plan()->Get(static_cast<flatbuffers::uoffset_t>(p))->name()->str() == method.name)
          plan = p;
      }
      auto decoded = decode_cuda_payload(pte.delegate_payload(plan, d), method.name, pte.name());
      REQUIRE_MESSAGE(decoded.ok(), error_of(decoded));
      view.payload = *decoded;
      return view;
    }
  }
  FAIL("no CudaBackend delegate in " << pte.name());
  return {};
}

// The execution plans with delegate data references taken out (where a
// payload sits is layout, not meaning), packed again for a byte comparison.
std::vector<std::vector<uint8_t>> plans_meaning(const PteFile& pte) {
  std::vector<std::vector<uint8_t>> out;
  for (const auto* plan : *pte.program().execution_plan()) {
    std::unique_ptr<fb::ExecutionPlanT> object(plan->UnPack());
    for (auto& delegate : object->delegates) delegate->processed.reset();
    flatbuffers::FlatBufferBuilder builder;
    builder.Finish(fb::ExecutionPlan::Pack(builder, object.get()));
    out.emplace_back(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
  }
  return out;
}

std::map<std::string, std::string> named_data_hashes(const PteFile& pte) {
  std::map<std::string, std::string> out;
  for (const auto& entry : pte.named_data()) out[entry.key] = ptb::test::sha256_hex(pte.named_data_bytes(entry));
  return out;
}

bool documented_difference(const nlohmann::json& entry) {
  std::vector<std::string> inputs = entry["inputs"];
  bool plain = entry["fallback"].is_null();
  return plain && (inputs == std::vector<std::string>{"sm80", "named_sm90"} ||
                   inputs == std::vector<std::string>{"sm80", "ptx_fallback"});
}

// What a refusal of ours must mention, read from ExecuTorch's message: the
// SM of a duplicate target, the FQN of a weight, the fallback's file.
std::vector<std::string> expected_mentions(const nlohmann::json& entry) {
  std::string error = entry["error"];
  std::vector<std::string> out;
  std::smatch match;
  if (std::regex_search(error, match, std::regex("Duplicate CUDA target (sm[0-9]+)"))) out.push_back(match[1]);
  if (std::regex_search(error, match, std::regex("FQN '([^']+)'"))) out.push_back(match[1]);
  if (std::regex_search(error, match, std::regex("Fallback PTE ([^ ]+) must"))) {
    out.push_back(match[1]);
    out.push_back("PTX-capable");
  }
  if (error.find("programs differ") != std::string::npos) out.push_back("are different programs");
  // Every refusal of a pair names both inputs.
  if (error.find("Fallback PTE") == std::string::npos) {
    for (const auto& input : entry["inputs"]) out.push_back(input.get<std::string>() + "/model.pte");
  }
  return out;
}

}  // namespace

TEST_CASE("merge: ExecuTorch's verdict on each of the 11 combinations, but for the two documented differences") {
  PTB_REQUIRE_FIXTURES();
  auto matrix = ptb::test::read_json(fixture("cuda/merge_matrix.json"));
  REQUIRE(matrix.size() == 11);
  for (const auto& entry : matrix) {
    std::vector<std::string> inputs = entry["inputs"];
    std::optional<std::string> fallback;
    if (!entry["fallback"].is_null()) fallback = entry["fallback"].get<std::string>();
    CAPTURE(entry.dump());
    TempDir out;
    auto result = merge_programs(request_for(inputs, fallback, out));

    if (documented_difference(entry) && inputs[1] == "named_sm90") {
      // ExecuTorch before #24314 compared data_name; the weights are the same.
      REQUIRE_MESSAGE(result.ok(), error_of(result));
      REQUIRE(result->variants.size() == 2);
      CHECK(result->variants[0].target_sm == 80);
      CHECK(result->variants[1].target_sm == 90);
      continue;
    }
    if (documented_difference(entry)) {
      // ExecuTorch calls the PTX-only library a native sm75 cubin.
      REQUIRE_FALSE(result.ok());
      CHECK(result.error().message.find("ptx_fallback/model.pte") != std::string::npos);
      CHECK(result.error().message.find("no cubin") != std::string::npos);
      CHECK(result.error().message.find("--fallback") != std::string::npos);
      CHECK(folder_empty(out));
      continue;
    }
    if (!entry["ok"].get<bool>()) {
      REQUIRE_FALSE(result.ok());
      CHECK(result.error().kind == ErrorKind::Invalid);
      for (const std::string& mention : expected_mentions(entry)) {
        CHECK_MESSAGE(result.error().message.find(mention) != std::string::npos,
                      "'" << mention << "' missing from: " << result.error().message);
      }
      CHECK(folder_empty(out));
      continue;
    }

    REQUIRE_MESSAGE(result.ok(), error_of(result));
    const auto& expected = entry["variants"];
    REQUIRE(result->variants.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(result->variants[i].target_sm == expected[i]["target_sm"].get<uint32_t>());
      CHECK(result->variants[i].ptx_compute == expected[i]["ptx_compute"].get<uint32_t>());
      CHECK(result->variants[i].fallback_only == expected[i]["fallback_only"].get<bool>());
    }
    auto merged = PteFile::open(result->output_pte);
    REQUIRE_MESSAGE(merged.ok(), error_of(merged));
    CudaView view = cuda_view(*merged);
    CHECK(view.spec_keys == entry["compile_specs"].get<std::vector<std::string>>());
    REQUIRE(view.payload.variants.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(view.payload.variants[i].target_sm == expected[i]["target_sm"].get<uint32_t>());
      CHECK(view.payload.variants[i].fallback_only == expected[i]["fallback_only"].get<bool>());
      // Each library is in the output, the bytes its key (a SHA-256) names.
      const PteNamedData* library = merged->find_named_data(view.payload.variants[i].so_key);
      REQUIRE(library != nullptr);
      CHECK(ptb::test::sha256_hex(merged->named_data_bytes(*library)) + "_so_blob" == view.payload.variants[i].so_key);
    }
    CHECK(read_bytes(result->output_ptd) == read_bytes(source_of(inputs[0]).ptd_path));
  }
}

TEST_CASE("merge: sm80 + sm90 + sm120 + PTX fallback means what ExecuTorch's merge wrote") {
  PTB_REQUIRE_FIXTURES();
  TempDir out;
  auto result = merge_programs(request_for({"sm80", "sm90", "sm120"}, std::string("ptx_fallback"), out));
  REQUIRE_MESSAGE(result.ok(), error_of(result));

  auto ours = PteFile::open(result->output_pte);
  auto theirs = PteFile::open(fixture("cuda/merged_reference/model.pte").string());
  REQUIRE_MESSAGE(ours.ok(), error_of(ours));
  REQUIRE(theirs.ok());
  // Same methods, values, instructions and compile specs (cuda_include_ptx gone).
  CHECK(plans_meaning(*ours) == plans_meaning(*theirs));
  // Same payload: variants with their library keys, and the weight manifest.
  CudaView our_view = cuda_view(*ours);
  CudaView their_view = cuda_view(*theirs);
  REQUIRE(our_view.payload.variants.size() == 4);
  REQUIRE(their_view.payload.variants.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(our_view.payload.variants[i].target_sm == their_view.payload.variants[i].target_sm);
    CHECK(our_view.payload.variants[i].ptx_compute == their_view.payload.variants[i].ptx_compute);
    CHECK(our_view.payload.variants[i].fallback_only == their_view.payload.variants[i].fallback_only);
    CHECK(our_view.payload.variants[i].so_key == their_view.payload.variants[i].so_key);
  }
  REQUIRE(our_view.payload.weights.size() == their_view.payload.weights.size());
  for (size_t i = 0; i < our_view.payload.weights.size(); ++i) {
    const CudaWeight& a = our_view.payload.weights[i];
    const CudaWeight& b = their_view.payload.weights[i];
    CHECK(a.fqn == b.fqn);
    CHECK(a.storage_key == b.storage_key);
    CHECK(a.storage_nbytes == b.storage_nbytes);
    CHECK(a.dtype == b.dtype);
    CHECK(a.sizes == b.sizes);
    CHECK(a.strides == b.strides);
  }
  // The four libraries, byte for byte, and nothing else as named data.
  CHECK(named_data_hashes(*ours) == named_data_hashes(*theirs));
  CHECK(named_data_hashes(*ours).size() == 4);
  // The weights: ExecuTorch's data file is a copy of sm80's; so is ours.
  auto our_ptd = PtdFile::open(result->output_ptd);
  auto their_ptd = PtdFile::open(fixture("cuda/merged_reference/aoti_cuda_blob.ptd").string());
  REQUIRE(our_ptd.ok());
  REQUIRE(their_ptd.ok());
  REQUIRE(our_ptd->entries().size() == their_ptd->entries().size());
  for (const PtdEntry& entry : their_ptd->entries()) {
    const PtdEntry* mine = our_ptd->find(entry.key);
    REQUIRE(mine != nullptr);
    CHECK(ptb::test::sha256_hex(our_ptd->bytes(*mine)) == ptb::test::sha256_hex(their_ptd->bytes(entry)));
  }
  CHECK(result->weight_count == 2);
  CHECK(result->weight_bytes == 8192 + 256);

  // The provenance ExecuTorch printed, row for row.
  std::istringstream printed(ptb::test::read_text(fixture("cuda/merged_reference/provenance.txt")));
  std::string line;
  std::getline(printed, line);  // title
  std::getline(printed, line);  // header
  size_t row = 0;
  while (std::getline(printed, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream split(line);
    for (std::string cell; std::getline(split, cell, '\t');) cells.push_back(cell);
    REQUIRE(cells.size() == 4);
    REQUIRE(row < result->provenance.size());
    const VariantOrigin& origin = result->provenance[row++];
    CHECK(origin.delegate() == cells[0]);
    CHECK(variant_kind_name(origin.kind) == cells[1]);
    CHECK(origin.target() == cells[2]);
    std::string source = cells[3].substr(0, cells[3].find(' '));
    CHECK(origin.source_pte.size() >= source.size());
    CHECK(origin.source_pte.compare(origin.source_pte.size() - source.size(), source.size(), source) == 0);
    CHECK(origin.from_fallback_option == (cells[3].find("[fallback]") != std::string::npos));
  }
  CHECK(row == result->provenance.size());
}

TEST_CASE("merge: the output merges again, and its inherited fallback stays the only one") {
  PTB_REQUIRE_FIXTURES();
  TempDir first;
  auto with_fallback = merge_programs(request_for({"sm80"}, std::string("ptx_fallback"), first));
  REQUIRE_MESSAGE(with_fallback.ok(), error_of(with_fallback));

  TempDir second;
  MergeRequest again = request_for({"sm120"}, std::nullopt, second);
  again.inputs.insert(again.inputs.begin(), MergeSource{with_fallback->output_pte, with_fallback->output_ptd});
  auto merged = merge_programs(again);
  REQUIRE_MESSAGE(merged.ok(), error_of(merged));
  REQUIRE(merged->variants.size() == 3);
  CHECK(merged->variants[0].target_sm == 80);
  CHECK(merged->variants[1].target_sm == 120);
  CHECK(merged->variants[2].fallback_only);
  CHECK(merged->variants[2].ptx_compute == 75);
  CHECK(merged->provenance[2].source_pte == with_fallback->output_pte);
  CHECK_FALSE(merged->provenance[2].from_fallback_option);

  // A second fallback, from --fallback or from another input, is refused.
  TempDir third;
  again.output_pte = (third / "x.pte").string();
  again.output_ptd = (third / "x.ptd").string();
  again.fallback = source_of("ptx_fallback");
  auto extra = merge_programs(again);
  REQUIRE_FALSE(extra.ok());
  CHECK(extra.error().message.find("already carries a fallback") != std::string::npos);
  again.fallback.reset();
  TempDir other;
  auto sm120_with_fallback = merge_programs(request_for({"sm120"}, std::string("ptx_fallback"), other));
  REQUIRE_MESSAGE(sm120_with_fallback.ok(), error_of(sm120_with_fallback));
  again.inputs[1] = MergeSource{sm120_with_fallback->output_pte, sm120_with_fallback->output_ptd};
  auto twice = merge_programs(again);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("both carry a fallback") != std::string::npos);
  CHECK(folder_empty(third));
}

TEST_CASE("merge: the first input's data_name is kept; another data_name does not matter") {
  PTB_REQUIRE_FIXTURES();
  TempDir out;
  auto result = merge_programs(request_for({"named_sm90", "sm80"}, std::nullopt, out));
  REQUIRE_MESSAGE(result.ok(), error_of(result));
  auto merged = PteFile::open(result->output_pte);
  REQUIRE(merged.ok());
  CudaView view = cuda_view(*merged);
  CHECK(view.spec_keys == std::vector<std::string>{"method_name", "data_name", "target_device"});
  REQUIRE(view.payload.variants.size() == 2);
  CHECK(view.payload.variants[0].target_sm == 80);
  CHECK(view.payload.variants[1].target_sm == 90);
}

TEST_CASE("merge: without a kernel scan, the PTX-only input is taken as ExecuTorch takes it") {
  PTB_REQUIRE_FIXTURES();
  TempDir out;
  MergeRequest request = request_for({"sm80", "ptx_fallback"}, std::nullopt, out);
  request.check_kernels = false;
  auto result = merge_programs(request);
  REQUIRE_MESSAGE(result.ok(), error_of(result));
  REQUIRE(result->variants.size() == 2);
  CHECK(result->variants[0].target_sm == 75);
  CHECK(result->variants[0].ptx_compute == 0);
  CHECK_FALSE(result->variants[0].fallback_only);
}

TEST_CASE("merge: usage errors are exit code 2 and write nothing") {
  PTB_REQUIRE_FIXTURES();
  TempDir out;
  MergeRequest request = request_for({"sm80", "sm90"}, std::nullopt, out);
  request.output_ptd.clear();
  auto no_data_output = merge_programs(request);
  REQUIRE_FALSE(no_data_output.ok());
  CHECK(no_data_output.error().kind == ErrorKind::Usage);
  CHECK(no_data_output.error().message.find("--output-data") != std::string::npos);

  MergeRequest alone = request_for({"sm80"}, std::nullopt, out);
  auto single = merge_programs(alone);
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().kind == ErrorKind::Usage);

  MergeRequest mixed = request_for({"sm80", "sm90"}, std::nullopt, out);
  mixed.inputs[1].ptd_path.clear();
  auto half = merge_programs(mixed);
  REQUIRE_FALSE(half.ok());
  CHECK(half.error().kind == ErrorKind::Usage);
  CHECK(folder_empty(out));
}

// ---- Exports made from the real program with ptbundle's writers ----------------

namespace {

struct Maker {
  TempDir dir;
  std::string template_pte = fixture("cuda/sm80/model.pte").string();
  std::vector<uint8_t> so_sm80 = read_bytes(fixture("cuda/so/sm80.so"));
  std::vector<uint8_t> so_sm90 = read_bytes(fixture("cuda/so/sm90.so"));
  std::vector<uint8_t> so_sm120 = read_bytes(fixture("cuda/so/sm120.so"));
  std::vector<uint8_t> so_compute75 = read_bytes(fixture("cuda/so/compute75.so"));

  // A weights file of `size` bytes with a pattern, one byte changed at `flip`.
  std::unique_ptr<MappedFile> weights(const std::string& name, uint64_t size, std::optional<uint64_t> flip = {}) {
    fs::path path = dir / name;
    std::ofstream out(path, std::ios::binary);
    std::vector<char> block(1 << 20);
    for (uint64_t done = 0; done < size; done += block.size()) {
      for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>((done + i) * 2654435761u >> 13);
      if (flip && *flip >= done && *flip < done + block.size()) block[*flip - done] ^= 0x40;
      out.write(block.data(), static_cast<std::streamsize>(std::min<uint64_t>(block.size(), size - done)));
    }
    out.close();
    auto mapped = MappedFile::open(path.string());
    REQUIRE(mapped.ok());
    return std::make_unique<MappedFile>(std::move(*mapped));
  }

  MergeSource make(const std::string& name, const ExportSpec& spec, bool with_data = true) {
    MergeSource source{(dir / (name + ".pte")).string(), with_data ? (dir / (name + ".ptd")).string() : ""};
    auto written = ptb::test::write_export(template_pte, spec, source.pte_path, source.ptd_path);
    REQUIRE_MESSAGE(written.ok(), error_of(written));
    return source;
  }
};

ExportSpec spec_with(std::vector<ptb::test::ExportLibrary> libraries, std::vector<ptb::test::ExportWeight> weights) {
  ExportSpec spec;
  spec.libraries = std::move(libraries);
  spec.weights = std::move(weights);
  return spec;
}

MergeRequest two_way(const MergeSource& a, const MergeSource& b, const TempDir& out, bool with_data = true) {
  MergeRequest request;
  request.inputs = {a, b};
  request.output_pte = (out / "merged.pte").string();
  if (with_data) request.output_ptd = (out / "merged.ptd").string();
  return request;
}

}  // namespace

TEST_CASE("merge: large weights are proven equal, and the first differing byte is named") {
  PTB_REQUIRE_FIXTURES();
  Maker maker;
  constexpr uint64_t kSize = 40ull << 20;  // above the size where comparison goes parallel
  constexpr uint64_t kFlip = (33ull << 20) + 7;
  auto same = maker.weights("same.bin", kSize);
  auto flipped = maker.weights("flipped.bin", kSize, kFlip);
  auto small = maker.weights("small.bin", 4096);
  auto a = maker.make("a", spec_with({{80, 0, false, maker.so_sm80}}, {{"w", same.get(), 0, kSize}, {"b", small.get(), 0, 4096}}));
  auto b = maker.make("b", spec_with({{90, 0, false, maker.so_sm90}}, {{"w", same.get(), 0, kSize}, {"b", small.get(), 0, 4096}}));
  auto c = maker.make("c", spec_with({{120, 0, false, maker.so_sm120}}, {{"w", flipped.get(), 0, kSize}, {"b", small.get(), 0, 4096}}));

  TempDir out;
  auto good = merge_programs(two_way(a, b, out));
  REQUIRE_MESSAGE(good.ok(), error_of(good));
  CHECK(good->weight_count == 2);
  CHECK(good->weight_bytes == kSize + 4096);
  CHECK(good->compared_bytes == 2 * (kSize + 4096));
  auto ptd = PtdFile::open(good->output_ptd);
  REQUIRE(ptd.ok());
  CHECK(ptd->find("cuda_fqn_weight:cuda:w")->size == kSize);

  for (unsigned threads : {1u, 2u, 4u}) {
    TempDir refused;
    MergeRequest request = two_way(a, c, refused);
    request.inputs.push_back(b);
    request.threads = threads;
    auto bad = merge_programs(request);
    REQUIRE_FALSE(bad.ok());
    CHECK_MESSAGE(bad.error().message.find("FQN 'w': byte " + std::to_string(kFlip) + " of " + std::to_string(kSize)) !=
                      std::string::npos,
                  bad.error().message);
    CHECK(bad.error().message.find(a.pte_path + " and " + c.pte_path) != std::string::npos);
    CHECK(folder_empty(refused));
  }
}

TEST_CASE("merge: weights kept inside the .pte merge without data files") {
  PTB_REQUIRE_FIXTURES();
  Maker maker;
  auto weights = maker.weights("w.bin", 8192);
  auto a = maker.make("a", spec_with({{80, 0, false, maker.so_sm80}}, {{"w", weights.get(), 0, 8192}}), false);
  auto b = maker.make("b", spec_with({{90, 0, false, maker.so_sm90}}, {{"w", weights.get(), 0, 8192}}), false);
  TempDir out;
  auto result = merge_programs(two_way(a, b, out, false));
  REQUIRE_MESSAGE(result.ok(), error_of(result));
  CHECK(result->output_ptd.empty());
  auto merged = PteFile::open(result->output_pte);
  REQUIRE(merged.ok());
  const PteNamedData* weight = merged->find_named_data("cuda_fqn_weight:cuda:w");
  REQUIRE(weight != nullptr);
  CHECK(weight->size == 8192);
  CHECK(merged->find_named_data(ptb::test::library_key(maker.so_sm90)) != nullptr);
  CHECK(std::distance(fs::directory_iterator(out.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("merge: refusals name both files and the first difference") {
  PTB_REQUIRE_FIXTURES();
  Maker maker;
  auto weights = maker.weights("w.bin", 8192);
  auto base = spec_with({{80, 0, false, maker.so_sm80}}, {{"w", weights.get(), 0, 8192}});
  auto a = maker.make("a", base);

  auto refusal = [&](const MergeSource& b) {
    TempDir out;
    auto result = merge_programs(two_way(a, b, out));
    REQUIRE_FALSE(result.ok());
    CHECK(folder_empty(out));
    std::string message = result.error().message;
    CHECK_MESSAGE(message.find(b.pte_path) != std::string::npos, message);
    return message;
  };

  SUBCASE("named data that is not CUDA's") {
    auto spec = spec_with({{90, 0, false, maker.so_sm90}}, {{"w", weights.get(), 0, 8192}});
    spec.extra_named_data.push_back({"tokenizer", {1, 2, 3}});
    std::string message = refusal(maker.make("b", spec));
    CHECK(message.find("'tokenizer' only in") != std::string::npos);
  }
  SUBCASE("a compile spec other than cuda_include_ptx and data_name") {
    auto spec = spec_with({{90, 0, false, maker.so_sm90}}, {{"w", weights.get(), 0, 8192}});
    spec.extra_specs.push_back({"max_workspace", "1024"});
    std::string message = refusal(maker.make("b", spec));
    CHECK_MESSAGE(message.find(a.pte_path + " and " + maker.dir.path().string() + "/b.pte are different programs: method "
                               "'forward', delegates[0].compile_specs: 2 entries vs 3") != std::string::npos,
                  message);
  }
  SUBCASE("a weight with another size") {
    auto spec = spec_with({{90, 0, false, maker.so_sm90}}, {{"w", weights.get(), 0, 4096}});
    std::string message = refusal(maker.make("b", spec));
    CHECK(message.find("FQN 'w': storage size 8192 vs 4096") != std::string::npos);
  }
  SUBCASE("a weight under another FQN") {
    auto spec = spec_with({{90, 0, false, maker.so_sm90}}, {{"v", weights.get(), 0, 8192}});
    std::string message = refusal(maker.make("b", spec));
    CHECK(message.find("FQN 'w' only in") != std::string::npos);
  }
  SUBCASE("an untargeted export") {
    auto spec = spec_with({{0, 0, false, maker.so_sm90}}, {{"w", weights.get(), 0, 8192}});
    std::string message = refusal(maker.make("b", spec));
    CHECK(message.find("no target SM") != std::string::npos);
  }
  SUBCASE("a fallback whose library holds no PTX") {
    auto spec = spec_with({{90, 90, false, maker.so_sm90}}, {{"w", weights.get(), 0, 8192}});
    auto b = maker.make("b", spec);
    TempDir out;
    MergeRequest request = two_way(a, a, out);
    request.inputs.pop_back();
    request.fallback = b;
    auto result = merge_programs(request);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("holds only cubins (sm_90)") != std::string::npos);
  }
}

TEST_CASE("merge: the CLI prints the provenance table or JSON, and refuses with exit code 1") {
  PTB_REQUIRE_FIXTURES();
  auto input = [](const std::string& folder) {
    MergeSource source = source_of(folder);
    return ptb::test::quote(source.pte_path + "," + source.ptd_path);
  };
  TempDir out;
  std::string outputs = "-o " + ptb::test::quote(out / "m.pte") + " --output-data " + ptb::test::quote(out / "m.ptd");
  auto table = ptb::test::run_cli("merge " + outputs + " " + input("sm80") + " " + input("sm90") + " " +
                                  input("sm120") + " --fallback " + input("ptx_fallback"));
  REQUIRE_MESSAGE(table.exit_code == 0, table.err);
  std::istringstream lines(table.out);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    rows.emplace_back(std::istream_iterator<std::string>(words), std::istream_iterator<std::string>());
  }
  REQUIRE(rows.size() == 5);
  CHECK(rows[0] == std::vector<std::string>{"delegate", "kind", "target", "source"});
  CHECK(rows[1][0] == "forward[0]");
  CHECK(rows[1][1] == "cubin");
  CHECK(rows[1][2] == "sm80");
  CHECK(rows[3][2] == "sm120");
  CHECK(rows[4][1] == "ptx-fallback");
  CHECK(rows[4][2] == "compute_75");
  CHECK(rows[4].back() == "[fallback]");

  auto json = ptb::test::run_cli("merge --json " + outputs + " " + input("sm90") + " " + input("sm80"));
  REQUIRE_MESSAGE(json.exit_code == 0, json.err);
  auto document = nlohmann::json::parse(json.out);
  REQUIRE(document["variants"].size() == 2);
  CHECK(document["variants"][0]["target_sm"] == 80);
  CHECK(document["provenance"][0]["kind"] == "cubin");
  CHECK(document["provenance"][0]["target"] == "sm80");
  CHECK(document["provenance"][0]["source"].get<std::string>().find("sm80/model.pte") != std::string::npos);
  CHECK(document["weights"]["count"] == 2);
  CHECK(document["outputs"]["ptd"] == (out / "m.ptd").string());

  TempDir empty;
  auto refused = ptb::test::run_cli("merge -o " + ptb::test::quote(empty / "m.pte") + " --output-data " +
                                    ptb::test::quote(empty / "m.ptd") + " " + input("sm80") + " " +
                                    input("bad_weights_sm86"));
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK(refused.err.find("layer.bias") != std::string::npos);
  CHECK(folder_empty(empty));

  auto usage = ptb::test::run_cli("merge -o " + ptb::test::quote(empty / "m.pte") + " " + input("sm80") + " " + input("sm90"));
  CHECK(usage.exit_code == 2);
  CHECK(folder_empty(empty));
}

// ---- Bundle-level merge ------------------------------------------------------------

namespace {

// A bundle at `dir` with the parts (name, source) exported by `export`.
void export_bundle(const fs::path& dir, const std::vector<std::pair<std::string, MergeSource>>& parts) {
  ExportOptions options;
  options.output_dir = dir.string();
  for (const auto& [name, source] : parts) {
    PartRequest part;
    part.name = name;
    part.program = source.pte_path;
    if (!source.ptd_path.empty()) part.data_file = source.ptd_path;
    options.parts.push_back(part);
  }
  options.tool_version = "test";
  auto exported = export_parts(options);
  REQUIRE_MESSAGE(exported.ok(), error_of(exported));
}

void export_bundle(const fs::path& dir, const std::string& name, const MergeSource& source) {
  export_bundle(dir, {{name, source}});
}

BundleMergeRequest bundle_request(std::vector<fs::path> bundles, const fs::path& output) {
  BundleMergeRequest request;
  for (const auto& bundle : bundles) request.bundles.push_back(bundle.string());
  request.output_dir = output.string();
  request.tool_version = "test";
  return request;
}

bool nothing_beside(const fs::path& dir, const std::vector<std::string>& expected) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  std::vector<std::string> sorted = expected;
  std::sort(sorted.begin(), sorted.end());
  return names == sorted;
}

}  // namespace

TEST_CASE("merge bundles: CUDA parts with multi-variant payloads become one program, the PTX-only bundle its fallback") {
  PTB_REQUIRE_FIXTURES();
  TempDir work;
  for (const char* folder : {"sm80", "ptx_fallback", "sm90"}) export_bundle(work / folder, "encoder", source_of(folder));
  auto result = merge_bundles(bundle_request({work / "sm80", work / "ptx_fallback", work / "sm90"}, work / "merged"));
  REQUIRE_MESSAGE(result.ok(), error_of(result));
  REQUIRE(result->parts.size() == 1);
  CHECK(result->parts[0].layout == PartMergeLayout::MultiVariant);
  REQUIRE(result->parts[0].provenance.size() == 3);
  CHECK(result->parts[0].provenance[2].kind == VariantKind::PtxFallback);

  // The manifest reads back through the validating reader, and says what the files hold.
  auto manifest = read_manifest((work / "merged").string());
  REQUIRE_MESSAGE(manifest.ok(), error_of(manifest));
  const ManifestPart& part = manifest->parts.at(0);
  CHECK(part.source.kind == "merge");
  CHECK(part.source.files == std::vector<std::string>{"sm80", "ptx_fallback", "sm90"});
  for (const ManifestFile& file : part.files) {
    CHECK(file.sha256 == ptb::test::sha256_hex(Bytes(read_bytes(work / "merged" / file.path).data(), file.size)));
  }
  REQUIRE(part.cuda.has_value());
  std::vector<std::string> targets;
  for (const KernelTarget& target : part.cuda->kernel_targets) targets.push_back(target.target + ":" + target.kind);
  CHECK(targets == std::vector<std::string>{"compute_75:ptx", "sm_80:cubin", "sm_90:cubin"});

  auto merged = PteFile::open((work / "merged" / "encoder.pte").string());
  REQUIRE(merged.ok());
  CudaView view = cuda_view(*merged);
  REQUIRE(view.payload.variants.size() == 3);
  CHECK(view.payload.variants[0].target_sm == 80);
  CHECK(view.payload.variants[1].target_sm == 90);
  CHECK(view.payload.variants[2].fallback_only);
  // export gave the part its data name; the merge keeps it.
  CHECK(std::find(view.spec_keys.begin(), view.spec_keys.end(), "data_name") != view.spec_keys.end());
  CHECK(read_bytes(work / "merged" / "encoder.ptd") == read_bytes(source_of("sm80").ptd_path));
}

TEST_CASE("merge bundles: single-blob parts keep one program per GPU target and share one data file") {
  PTB_REQUIRE_FIXTURES();
  Maker maker;
  auto weights = maker.weights("blob.bin", 64 << 10);
  auto single = [&](const char* name, const std::vector<uint8_t>& library, const MappedFile* file) {
    ExportSpec spec = spec_with({{0, 0, false, library}}, {{"blob", file, 0, 64 << 10}});
    spec.single_blob = true;
    return maker.make(name, spec);
  };
  TempDir work;
  export_bundle(work / "a", "head", single("a", maker.so_sm90, weights.get()));
  export_bundle(work / "b", "head", single("b", maker.so_sm80, weights.get()));
  export_bundle(work / "c", "head", single("c", maker.so_sm120, weights.get()));

  auto result = merge_bundles(bundle_request({work / "a", work / "b"}, work / "ab"));
  REQUIRE_MESSAGE(result.ok(), error_of(result));
  REQUIRE(result->parts.size() == 1);
  CHECK(result->parts[0].layout == PartMergeLayout::PerTarget);
  REQUIRE(result->parts[0].provenance.size() == 2);
  CHECK(result->parts[0].provenance[0].target() == "sm80");
  CHECK(result->parts[0].provenance[1].target() == "sm90");
  CHECK(fs::exists(work / "ab" / "sm_80" / "head.pte"));
  CHECK(read_bytes(work / "ab" / "sm_80" / "head.pte") == read_bytes(work / "b" / "head.pte"));
  CHECK(read_bytes(work / "ab" / "sm_90" / "head.pte") == read_bytes(work / "a" / "head.pte"));
  CHECK(read_bytes(work / "ab" / "head.ptd") == read_bytes(work / "a" / "head.ptd"));
  CHECK_FALSE(fs::exists(work / "ab" / "head.pte"));

  auto manifest = read_manifest((work / "ab").string());
  REQUIRE_MESSAGE(manifest.ok(), error_of(manifest));
  std::vector<std::string> programs;
  for (const ManifestFile& file : manifest->parts.at(0).files) {
    if (file.role == FileRole::Program) programs.push_back(file.target.value_or("none") + "=" + file.path);
  }
  CHECK(programs == std::vector<std::string>{"sm_80=sm_80/head.pte", "sm_90=sm_90/head.pte"});

  // A merged bundle merges again: its programs keep the targets its manifest lists.
  auto again = merge_bundles(bundle_request({work / "ab", work / "c"}, work / "abc"));
  REQUIRE_MESSAGE(again.ok(), error_of(again));
  CHECK(fs::exists(work / "abc" / "sm_120" / "head.pte"));
  CHECK(fs::exists(work / "abc" / "sm_80" / "head.pte"));

  // The same target twice, or other weights, is refused, and nothing is left behind.
  auto twice = merge_bundles(bundle_request({work / "ab", work / "b"}, work / "twice"));
  REQUIRE_FALSE(twice.ok());
  CHECK_MESSAGE(twice.error().message.find("both programs for sm_80") != std::string::npos, twice.error().message);
  auto other_weights = maker.weights("other.bin", 64 << 10, 100);
  export_bundle(work / "d", "head", single("d", maker.so_sm120, other_weights.get()));
  auto different = merge_bundles(bundle_request({work / "a", work / "d"}, work / "ad"));
  REQUIRE_FALSE(different.ok());
  CHECK_MESSAGE(different.error().message.find("different weights") != std::string::npos, different.error().message);
  CHECK(nothing_beside(work.path(), {"a", "b", "c", "d", "ab", "abc"}));
}

TEST_CASE("merge bundles: a part kept per GPU target verifies, inspects and picks its program by the GPU") {
  PTB_REQUIRE_FIXTURES();
  Maker maker;
  auto weights = maker.weights("blob.bin", 64 << 10);
  auto single = [&](const char* name, const std::vector<uint8_t>& library) {
    ExportSpec spec = spec_with({{0, 0, false, library}}, {{"blob", weights.get(), 0, 64 << 10}});
    spec.single_blob = true;
    return maker.make(name, spec);
  };
  TempDir work;
  export_bundle(work / "a", "head", single("a", maker.so_sm90));
  export_bundle(work / "c", "head", single("c", maker.so_sm120));
  auto merged = merge_bundles(bundle_request({work / "a", work / "c"}, work / "ac"));
  REQUIRE_MESSAGE(merged.ok(), error_of(merged));
  const std::string bundle = ptb::test::quote(work / "ac");
  auto has = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };

  // Both programs are checked against the shared data file and owned by the bundle.
  auto on_sm90 = ptb::test::run_cli("verify -v " + bundle + " --gpu sm_90");
  CHECK_MESSAGE(on_sm90.exit_code == 0, on_sm90.out);
  CHECK_FALSE(has(on_sm90.out, "FAIL"));
  CHECK(has(on_sm90.out, "sm_90/head.pte"));
  CHECK(has(on_sm90.out, "sm_120/head.pte"));
  CHECK(has(on_sm90.out, "picks the sm_90 program, native for sm_90"));
  CHECK(has(on_sm90.out, "every .pte and .ptd in the folder is listed"));
  auto on_sm120 = ptb::test::run_cli("verify -v " + bundle + " --gpu sm_120");
  CHECK_MESSAGE(on_sm120.exit_code == 0, on_sm120.out);
  CHECK(has(on_sm120.out, "picks the sm_120 program"));

  auto on_sm80 = ptb::test::run_cli("verify " + bundle + " --gpu sm_80");
  CHECK(on_sm80.exit_code == 1);
  CHECK_MESSAGE(has(on_sm80.out, "no program for sm_80: the part has programs for sm_90, sm_120"), on_sm80.out);

  // A program whose kernels are not its target's is caught.
  fs::copy_file(work / "c" / "head.pte", work / "ac" / "sm_90" / "head.pte", fs::copy_options::overwrite_existing);
  auto swapped = ptb::test::run_cli("verify " + bundle + " --gpu sm_90");
  CHECK(swapped.exit_code == 1);
  fs::copy_file(work / "a" / "head.pte", work / "ac" / "sm_90" / "head.pte", fs::copy_options::overwrite_existing);

  // A stray program in a target folder is unlisted.
  fs::create_directories(work / "ac" / "sm_86");
  fs::copy_file(work / "a" / "head.pte", work / "ac" / "sm_86" / "head.pte");
  auto stray = ptb::test::run_cli("verify " + bundle + " --gpu sm_90");
  CHECK(stray.exit_code == 1);
  CHECK_MESSAGE(has(stray.out, "sm_86/head.pte"), stray.out);
  fs::remove_all(work / "ac" / "sm_86");

  auto inspected = ptb::test::run_cli("inspect " + bundle);
  CHECK_MESSAGE(inspected.exit_code == 0, inspected.err);
  CHECK_MESSAGE(has(inspected.out, "program (sm_90) sm_90/head.pte"), inspected.out);
  CHECK(has(inspected.out, "program (sm_120) sm_120/head.pte"));
  CHECK(has(inspected.out, "data head.ptd"));

  // run opens the program for the GPU with the shared data file, or says which targets there are.
  RunPartOptions options;
  options.gpu = GpuCapability{12, 0};
  auto part = open_run_part((work / "ac").string(), options);
  REQUIRE_MESSAGE(part.ok(), error_of(part));
  CHECK_MESSAGE(has(part->variant, "picked the sm_120 program, native for sm_120 (sm_120/head.pte)"), part->variant);
  CHECK(has(part->weights.file, "head.ptd"));
  options.gpu = GpuCapability{8, 0};
  auto refused = open_run_part((work / "ac").string(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK_MESSAGE(has(refused.error().message, "programs for sm_90, sm_120"), refused.error().message);
}

TEST_CASE("merge bundles: a part without CUDA delegates is copied when the same in every bundle, refused when it differs") {
  PTB_REQUIRE_FIXTURES();
  TempDir work;
  auto portable = [](const char* name) { return MergeSource{fixture(std::string("executorch/") + name).string(), ""}; };
  export_bundle(work / "a", {{"encoder", source_of("sm80")}, {"add", portable("add.pte")}});
  export_bundle(work / "b", {{"encoder", source_of("sm90")}, {"add", portable("add.pte")}});
  export_bundle(work / "c", {{"encoder", source_of("sm90")}, {"add", portable("softmax.pte")}});

  auto merged = merge_bundles(bundle_request({work / "a", work / "b"}, work / "ab"));
  REQUIRE_MESSAGE(merged.ok(), error_of(merged));
  REQUIRE(merged->parts.size() == 2);
  CHECK(merged->parts[0].layout == PartMergeLayout::MultiVariant);
  CHECK(merged->parts[1].layout == PartMergeLayout::Identical);
  CHECK(read_bytes(work / "ab" / "add.pte") == read_bytes(work / "a" / "add.pte"));
  auto manifest = read_manifest((work / "ab").string());
  REQUIRE_MESSAGE(manifest.ok(), error_of(manifest));
  const ManifestFile* program = manifest->find_part("add")->find_file(FileRole::Program);
  REQUIRE(program != nullptr);
  CHECK(program->size == fs::file_size(work / "a" / "add.pte"));

  auto refused = merge_bundles(bundle_request({work / "a", work / "c"}, work / "ac"));
  REQUIRE_FALSE(refused.ok());
  CHECK_MESSAGE(refused.error().message.find("add.pte differ in size") != std::string::npos, refused.error().message);
  CHECK(refused.error().message.find("part 'add' has no CUDA delegate to merge") != std::string::npos);
  CHECK(nothing_beside(work.path(), {"a", "b", "c", "ab"}));
}

TEST_CASE("merge bundles: other parts, an existing output or a lone bundle are refused") {
  PTB_REQUIRE_FIXTURES();
  TempDir work;
  export_bundle(work / "a", "encoder", source_of("sm80"));
  export_bundle(work / "b", "decoder", source_of("sm90"));
  auto parts = merge_bundles(bundle_request({work / "a", work / "b"}, work / "m"));
  REQUIRE_FALSE(parts.ok());
  CHECK(parts.error().message.find("hold different parts: 'encoder' only in") != std::string::npos);

  fs::create_directories(work / "full");
  std::ofstream(work / "full" / "x") << "x";
  auto occupied = merge_bundles(bundle_request({work / "a", work / "a"}, work / "full"));
  REQUIRE_FALSE(occupied.ok());
  CHECK(occupied.error().kind == ErrorKind::Usage);
  auto lone = merge_bundles(bundle_request({work / "a"}, work / "m"));
  REQUIRE_FALSE(lone.ok());
  CHECK(lone.error().kind == ErrorKind::Usage);
  CHECK(nothing_beside(work.path(), {"a", "b", "full"}));

  // Through the CLI: folders are bundles; mixing folders and files is a usage error.
  auto mixed = ptb::test::run_cli("merge -o " + ptb::test::quote(work / "m") + " " + ptb::test::quote(work / "a") + " " +
                                  ptb::test::quote(source_of("sm90").pte_path));
  CHECK(mixed.exit_code == 2);
  auto refused = ptb::test::run_cli("merge -o " + ptb::test::quote(work / "m") + " " + ptb::test::quote(work / "a") + " " +
                                    ptb::test::quote(work / "b"));
  CHECK(refused.exit_code == 1);
  CHECK(nothing_beside(work.path(), {"a", "b", "full"}));
}

TEST_CASE("merge: --json output follows schemas/merge.schema.json, for programs and for bundles") {
  PTB_REQUIRE_FIXTURES();
  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
    ptb::test::skip("python3 with the jsonschema module is not installed");
    return;
  }
  TempDir work;
  auto input = [](const std::string& folder) {
    MergeSource source = source_of(folder);
    return ptb::test::quote(source.pte_path + "," + source.ptd_path);
  };
  auto programs = ptb::test::run_cli("merge --json -o " + ptb::test::quote(work / "m.pte") + " --output-data " +
                                     ptb::test::quote(work / "m.ptd") + " " + input("sm80") + " " + input("sm120") +
                                     " --fallback " + input("ptx_fallback"));
  REQUIRE_MESSAGE(programs.exit_code == 0, programs.err);
  export_bundle(work / "a", "encoder", source_of("sm80"));
  export_bundle(work / "b", "encoder", source_of("sm90"));
  auto bundles = ptb::test::run_cli("merge --json -o " + ptb::test::quote(work / "ab") + " " + ptb::test::quote(work / "a") +
                                    " " + ptb::test::quote(work / "b"));
  REQUIRE_MESSAGE(bundles.exit_code == 0, bundles.err);
  CHECK(nlohmann::json::parse(bundles.out)["parts"][0]["layout"] == "multi_variant");

  for (const std::string* document : {&programs.out, &bundles.out}) {
    CHECK_MESSAGE(ptb::test::schema_problem("merge", *document) == "", *document);
  }
}
