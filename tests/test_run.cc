// `ptbundle run`: what is found and checked before loading (everywhere), and
// the runs themselves on the GPU (skipped, with the reason, without LibTorch
// or without a GPU). GPU tests print their figures on lines starting "[gpu]".
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ptbundle/formats/npy.h"
#include "ptbundle/cuda/run.h"
#include "ptbundle/cuda/run_inputs.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/cuda/runner.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/results/timing.h"
#include "ptbundle/results/tolerance.h"
#include "gpu_support.h"
#include "support.h"

using namespace ptb;
using ptb::test::read_bytes;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

RunPartOptions on_gpu(uint32_t major, uint32_t minor) {
  RunPartOptions options;
  options.gpu = GpuCapability{major, minor};
  return options;
}

std::string contains_msg(const std::string& text, const std::string& part) {
  return "'" + part + "' not in: " + text;
}

#define CHECK_CONTAINS(text, part) CHECK_MESSAGE((text).find(part) != std::string::npos, contains_msg(text, part))

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Every occurrence of `needle` in `haystack`.
std::vector<size_t> find_all(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  std::vector<size_t> found;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i)
    if (std::equal(needle.begin(), needle.end(), haystack.begin() + static_cast<std::ptrdiff_t>(i))) found.push_back(i);
  return found;
}

std::vector<uint8_t> text_bytes(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

// ---- Without a GPU ----

TEST_CASE("run: a build with no runtime says what is missing and the CMake flags, exit 2") {
  if (kRunnerBuilt) {
    ptb::test::skip("this build has a runtime (built-in: " + std::string(kBuiltinRuntimeBuilt ? "yes" : "no") +
                    ", LibTorch: " + std::string(kLibTorchRunnerBuilt ? "yes" : "no") + ")");
    return;
  }
  PTB_REQUIRE_FIXTURES();
  // A good input: run opens and checks it before it says what the build lacks.
  auto result = ptb::test::run_cli("run " + ptb::test::quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --iterations 5");
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK_CONTAINS(result.err, "ptbundle: error: ptbundle run needs the CUDA toolkit (for its built-in AOTInductor "
                             "runtime) or LibTorch, and this build has neither (");
  CHECK_CONTAINS(result.err, "-DPTB_LIBTORCH=ON");
  CHECK_CONTAINS(result.err, "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')");
  CHECK(runner_unavailable_reason() + "\n" == result.err.substr(std::string("ptbundle: error: ").size()));
  // --help works without LibTorch.
  auto help = ptb::test::run_cli("run --help");
  CHECK(help.exit_code == 0);
  CHECK_CONTAINS(help.out, "--iterations");
}

TEST_CASE("run: an ExecuTorch CUDA export gives its per-FQN weights and the native variant") {
  PTB_REQUIRE_FIXTURES();
  auto part = open_run_part(ptb::test::fixture("cuda/sm90/model.pte").string(), on_gpu(9, 0));
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  CHECK(part->name == "model");
  CHECK(part->method == "forward");
  CHECK(part->library_key == "8d669a88201a337ff605119692db9f9dedaff1e36679fbb6ab2ca3a83385718e_so_blob");
  CHECK(part->library.size() == 26712);
  CHECK(to_hex(sha256(part->library)) == "8d669a88201a337ff605119692db9f9dedaff1e36679fbb6ab2ca3a83385718e");
  CHECK_CONTAINS(part->variant, "native for sm_90");
  CHECK_CONTAINS(part->kernels, "runs on sm_90");
  REQUIRE(part->inputs.has_value());
  REQUIRE(part->inputs->size() == 1);
  CHECK((*part->inputs)[0].tensor->sizes == std::vector<int64_t>{4, 32});
  CHECK((*part->inputs)[0].tensor->scalar_type == 6);
  REQUIRE(part->outputs->size() == 1);
  CHECK((*part->outputs)[0].tensor->sizes == std::vector<int64_t>{4, 64});

  CHECK(part->weights.layout == WeightsLayout::PerFqn);
  CHECK(fs::path(part->weights.file).filename() == "aoti_cuda_blob.ptd");  // found beside the .pte
  REQUIRE(part->weights.tensors.size() == 2);
  const auto& weight = part->weights.tensors[0];
  CHECK(weight.meta.fqn == "layer.weight");
  CHECK(weight.meta.storage_key == "cuda_fqn_weight:cuda:layer.weight");
  CHECK(weight.bytes.size() == 8192);
  CHECK(to_hex(sha256(weight.bytes)) == "742328b3fd2547ab84d2d614cae32d025ed5890cb49af6f4db43cce15b3db5fc");
  CHECK(weight.meta.sizes == std::vector<int64_t>{64, 32});
  CHECK(part->weights.tensors[1].bytes.size() == 256);
  CHECK(part->weights.total_bytes() == 8448);
}

TEST_CASE("run: a merged payload picks the exact SM, else the PTX fallback, else refuses before loading") {
  PTB_REQUIRE_FIXTURES();
  const std::string merged = ptb::test::fixture("cuda/merged_reference/model.pte").string();
  auto native = open_run_part(merged, on_gpu(12, 0));
  REQUIRE_MESSAGE(native.ok(), native.error().message);
  CHECK(native->library_key == "a13265254994e5c3fcbe7815e7b81b56a0ae4355eb5dfd16ac1375d96595e884_so_blob");
  CHECK_CONTAINS(native->variant, "native for sm_120");

  auto fallback = open_run_part(merged, on_gpu(8, 6));
  REQUIRE_MESSAGE(fallback.ok(), fallback.error().message);
  CHECK(fallback->library_key == "cddb1ad3c78bd67c3a745fffc91e7a1855a7848341302c76976acffb43c7a570_so_blob");
  CHECK_CONTAINS(fallback->variant, "PTX fallback on sm_86");
  CHECK(fallback->library.size() == 18520);

  auto old_gpu = open_run_part(merged, on_gpu(7, 0));
  REQUIRE_FALSE(old_gpu.ok());
  CHECK(old_gpu.error().kind == ErrorKind::Invalid);
  CHECK_CONTAINS(old_gpu.error().message, "part model (");
  CHECK_CONTAINS(old_gpu.error().message, "no variant for sm_70");

  // A single-variant export for another GPU: its kernels are judged before loading.
  auto wrong = open_run_part(ptb::test::fixture("cuda/sm120/model.pte").string(), on_gpu(9, 0));
  REQUIRE_FALSE(wrong.ok());
  CHECK_CONTAINS(wrong.error().message, "no variant for sm_90");
}

TEST_CASE("run: a weight missing from the data file, or short, fails naming the key and the file") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  fs::copy_file(ptb::test::fixture("cuda/sm90/model.pte"), dir / "encoder.pte");
  const auto original = read_bytes(ptb::test::fixture("cuda/sm90/aoti_cuda_blob.ptd"));

  SUBCASE("missing") {
    auto bytes = original;
    auto at = find_all(bytes, text_bytes("cuda_fqn_weight:cuda:layer.bias"));
    REQUIRE(at.size() == 1);
    bytes[at[0] + 27] = 'B';  // "layer.Bias": the key the payload names is gone
    write_bytes(dir / "encoder.ptd", bytes);
    auto part = open_run_part((dir / "encoder.pte").string(), on_gpu(9, 0));
    REQUIRE_FALSE(part.ok());
    CHECK_CONTAINS(part.error().message, (dir / "encoder.ptd").string());
    CHECK_CONTAINS(part.error().message, "no entry 'cuda_fqn_weight:cuda:layer.bias'");
    CHECK_CONTAINS(part.error().message, "of part encoder");
  }
  SUBCASE("short") {
    auto bytes = original;
    // The bias segment's size (256) in the flatbuffer, made 128.
    std::vector<uint8_t> size256{0, 1, 0, 0, 0, 0, 0, 0};
    auto at = find_all(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 384), size256);
    REQUIRE(at.size() == 1);
    bytes[at[0]] = 128;
    bytes[at[0] + 1] = 0;
    write_bytes(dir / "encoder.ptd", bytes);
    auto part = open_run_part((dir / "encoder.pte").string(), on_gpu(9, 0));
    REQUIRE_FALSE(part.ok());
    CHECK(part.error().message == (dir / "encoder.ptd").string() +
                                      ": entry 'cuda_fqn_weight:cuda:layer.bias' holds 128 bytes; weight "
                                      "'layer.bias' of part encoder needs 256");
  }
  SUBCASE("no data file at all") {
    auto part = open_run_part((dir / "encoder.pte").string(), on_gpu(9, 0));
    REQUIRE_FALSE(part.ok());
    CHECK_CONTAINS(part.error().message, "no entry 'cuda_fqn_weight:cuda:layer.weight'");
    CHECK_CONTAINS(part.error().message, "no data file was found beside it");
  }
}

TEST_CASE("run: bundle folders choose the part by --part, or the only one") {
  PTB_REQUIRE_FIXTURES();
  TempDir dir;
  using ptb::test::quote;
  using ptb::test::run_cli;
  // A folder of programs is not a bundle: bundle.json says which files are parts.
  fs::copy_file(ptb::test::fixture("cuda/sm90/model.pte"), dir / "encoder.pte");
  fs::copy_file(ptb::test::fixture("cuda/sm90/aoti_cuda_blob.ptd"), dir / "encoder.ptd");
  auto folder = open_run_part(dir.path().string(), on_gpu(9, 0));
  REQUIRE_FALSE(folder.ok());
  CHECK(folder.error().kind == ErrorKind::Invalid);
  CHECK_CONTAINS(folder.error().message, dir.path().string() + ": folder without bundle.json");
  CHECK_CONTAINS(folder.error().message, "ptbundle export -o BUNDLE --part NAME=PROGRAM.pte");
  fs::remove(dir / "encoder.pte");
  fs::remove(dir / "encoder.ptd");

  REQUIRE(run_cli("export -o " + quote(dir.path()) + " --part encoder=" +
                  quote(ptb::test::fixture("cuda/sm90/model.pte"))).exit_code == 0);
  auto only = open_run_part(dir.path().string(), on_gpu(9, 0));
  REQUIRE_MESSAGE(only.ok(), only.error().message);
  CHECK(only->name == "encoder");
  CHECK(only->weights.file == (dir / "encoder.ptd").string());

  REQUIRE(run_cli("export -o " + quote(dir.path()) + " --part head=" +
                  quote(ptb::test::fixture("cuda/sm80/model.pte"))).exit_code == 0);
  auto ambiguous = open_run_part(dir.path().string(), on_gpu(9, 0));
  REQUIRE_FALSE(ambiguous.ok());
  CHECK(ambiguous.error().kind == ErrorKind::Usage);
  CHECK_CONTAINS(ambiguous.error().message, "the bundle has parts encoder, head; choose one with --part");

  RunPartOptions head = on_gpu(8, 0);
  head.part = "head";
  auto chosen = open_run_part(dir.path().string(), head);
  REQUIRE_MESSAGE(chosen.ok(), chosen.error().message);
  CHECK(chosen->library_key == "52653101cc69ec3160816c66cf55d4c1a27f57928305bf46af4d0d21c4a22fe3_so_blob");

  RunPartOptions escape = head;
  escape.part = "../encoder";
  auto refused = open_run_part(dir.path().string(), escape);
  REQUIRE_FALSE(refused.ok());
  CHECK_CONTAINS(refused.error().message, "--part");

  RunPartOptions method = head;
  method.method = "backward";
  auto no_method = open_run_part(dir.path().string(), method);
  REQUIRE_FALSE(no_method.ok());
  CHECK(no_method.error().message == (dir / "head.pte").string() + ": no method 'backward'; it has forward");
}

TEST_CASE("run: AOTInductor packages with ExecuTorch's options give their library and weights blob") {
  PTB_REQUIRE_FIXTURES();
  auto part = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), on_gpu(9, 0));
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  CHECK(part->name == "mlp_et");
  CHECK(part->library.size() == 2302696);
  CHECK(part->weights.layout == WeightsLayout::Blob);
  CHECK(part->weights.blob.size() == 3200);
  CHECK(part->weights.blob_key ==
        "mlp_et/data/aotinductor/model/c245hcyfor5eg462qiaickptg2etf5wb67g6fdmmdzipjhgfotyu.wrapper_weights.blob");
  CHECK_FALSE(part->inputs.has_value());  // a .pt2 records no signature
  CHECK_CONTAINS(part->variant, "compiled on sm_90");
  CHECK_CONTAINS(part->kernels, "runs on sm_90");

  // Its kernels are sm_90 cubins: refused on an A100 before anything loads.
  auto a100 = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), on_gpu(8, 0));
  REQUIRE_FALSE(a100.ok());
  CHECK_CONTAINS(a100.error().message, "part mlp_et (");
  CHECK_CONTAINS(a100.error().message, "sm_80");

  // PyTorch's defaults: the kernel files come with the library, judged with
  // it; the weights are the library's own, so there is no blob to upload.
  auto defaults = open_run_part(ptb::test::fixture("aoti/mlp_sm90.pt2").string(), on_gpu(9, 0));
  REQUIRE_MESSAGE(defaults.ok(), defaults.error().message);
  CHECK(defaults->kernel_files.size() == 2);
  CHECK(defaults->weights.layout == WeightsLayout::None);
  CHECK_CONTAINS(defaults->kernels, "runs on sm_90");
  auto defaults_a100 = open_run_part(ptb::test::fixture("aoti/mlp_sm90.pt2").string(), on_gpu(8, 0));
  REQUIRE_FALSE(defaults_a100.ok());
  CHECK_CONTAINS(defaults_a100.error().message, "sm_80");

  // The bytes decide, as for verify and inspect: a .npy is none of the formats.
  auto other = open_run_part(ptb::test::fixture("aoti/mlp_et.in0.npy").string(), {});
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().kind == ErrorKind::Invalid);
  CHECK_CONTAINS(other.error().message, "not a .pte, .ptd, .bpte or .pt2 file");
}

TEST_CASE("run: .npy inputs are checked against the method's signature") {
  PTB_REQUIRE_FIXTURES();
  const std::string input = ptb::test::fixture("aoti/mlp_et.in0.npy").string();
  ValueSpec spec;
  spec.kind = "tensor";
  spec.tensor = TensorSpec{6, {4, 16}, {0, 1}, "static"};
  auto ok = read_input(input, spec, 0, "forward");
  REQUIRE_MESSAGE(ok.ok(), ok.error().message);
  CHECK(ok->shape == std::vector<uint64_t>{4, 16});
  CHECK(ok->data.size() == 256);

  spec.tensor->sizes = {4, 32};
  auto shape = read_input(input, spec, 0, "forward");
  REQUIRE_FALSE(shape.ok());
  CHECK(shape.error().message == input + ": holds float32 [4, 16]; input 0 of forward takes float32 [4, 32]");

  spec.tensor->sizes = {4, 16};
  spec.tensor->scalar_type = 15;
  auto dtype = read_input(input, spec, 0, "forward");
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.error().message == input + ": holds float32 [4, 16]; input 0 of forward takes bfloat16 [4, 16]");

  // Dynamic shapes: each dimension up to its bound.
  spec.tensor->scalar_type = 6;
  spec.tensor->sizes = {8, 16};
  spec.tensor->dynamism = "dynamic_bound";
  CHECK(read_input(input, spec, 0, "forward").ok());
  spec.tensor->sizes = {2, 16};
  auto over = read_input(input, spec, 0, "forward");
  REQUIRE_FALSE(over.ok());
  CHECK_CONTAINS(over.error().message, "takes float32 [2, 16] (each dimension at most)");

  ValueSpec scalar;
  scalar.kind = "int";
  auto not_tensor = read_input(input, scalar, 1, "forward");
  REQUIRE_FALSE(not_tensor.ok());
  CHECK(not_tensor.error().message == "input 1 of forward is a int, not a tensor; ptbundle run passes tensors only");

  // Without a signature the file is taken as it is.
  CHECK(read_input(input, std::nullopt, 0, "forward").ok());
}

TEST_CASE("run: random inputs follow the signature and the seed") {
  ValueSpec spec;
  spec.kind = "tensor";
  spec.tensor = TensorSpec{6, {4, 32}, {0, 1}, "static"};
  auto a = random_input(spec, 0, "forward", 7);
  auto b = random_input(spec, 0, "forward", 7);
  auto c = random_input(spec, 0, "forward", 8);
  REQUIRE(a.ok());
  CHECK(a->shape == std::vector<uint64_t>{4, 32});
  CHECK(a->data.size() == 512);
  CHECK(a->data == b->data);
  CHECK(a->data != c->data);
  const float* values = reinterpret_cast<const float*>(a->data.data());
  for (int i = 0; i < 128; ++i) {
    CHECK(values[i] >= -1.0f);
    CHECK(values[i] < 1.0f);
  }

  // float16 and bfloat16 values decode (through the comparison code) to [-1, 1].
  for (int8_t type : {int8_t{5}, int8_t{15}}) {
    spec.tensor->scalar_type = type;
    auto half = random_input(spec, 0, "forward", 1);
    REQUIRE(half.ok());
    CHECK(half->data.size() == 256);
    HostTensor ones = *half;
    auto stats = compare_tensors(tensor_bytes(*half), tensor_bytes(ones), Tolerance{});
    REQUIRE(stats.ok());
    std::vector<uint8_t> zero_bytes(256, 0);
    auto from_zero = compare_tensors(tensor_bytes(*half), {type, {4, 32}, Bytes(zero_bytes.data(), 256)}, Tolerance{});
    REQUIRE(from_zero.ok());
    CHECK(from_zero->max_abs_error <= 1.0);
    CHECK(from_zero->max_abs_error > 0.5);  // 128 values spread over [-1, 1)
  }
  spec.tensor->scalar_type = 11;
  auto flags = random_input(spec, 0, "forward", 1);
  REQUIRE(flags.ok());
  for (uint8_t v : flags->data) CHECK(v <= 1);
}

// ---- On the GPU ----

namespace {

using ptb::test::npy_tensor;
using ptb::test::ScopedTmpdir;
using ptb::test::this_gpu;

void run_package(const std::string& stem) {
  ScopedTmpdir tmp;
  auto part = open_run_part(ptb::test::fixture("aoti/" + stem + ".pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  auto model = load_part(*part, {});
  REQUIRE_MESSAGE(model.ok(), model.error().message);
  CHECK_MESSAGE(tmp.empty(), tmp.listing());  // the library's copy is gone once it is loaded
  CHECK(model->num_inputs() == 1);
  CHECK(model->num_outputs() == 1);
  CHECK(model->load_times().weight_bytes == 3200);

  HostTensor input = npy_tensor(ptb::test::fixture("aoti/" + stem + ".in0.npy"));
  HostTensor expected = npy_tensor(ptb::test::fixture("aoti/" + stem + ".out0.npy"));
  auto outputs = model->run({input});
  REQUIRE_MESSAGE(outputs.ok(), outputs.error().message);
  REQUIRE(outputs->size() == 1);
  auto stats = compare_tensors(tensor_bytes((*outputs)[0]), tensor_bytes(expected), Tolerance{1e-7, 1e-5});
  REQUIRE_MESSAGE(stats.ok(), stats.error().message);
  CHECK_MESSAGE(stats->passed(), test_case_verdict(stem, {{"output 0", {1e-7, 1e-5}, *stats, ""}}));

  auto times = model->time_calls({input}, 10, 200);
  REQUIRE_MESSAGE(times.ok(), times.error().message);
  TimingStats timing = summarize_timings(*times);
  CHECK(timing.count == 200);
  CHECK(timing.min_ms > 0);
  const LoadTimes& load = model->load_times();
  std::printf("[gpu] %s: max abs diff %.3g, max rel %.3g vs eager; load library %.1f ms, create %.1f ms, weights "
              "%.3f ms; per call median %.1f us, p99 %.1f us, CV %.1f%%\n",
              stem.c_str(), stats->max_abs_error, stats->max_rel_error, load.library_ms, load.create_ms,
              load.weights_ms, timing.median_ms * 1000, timing.p99_ms * 1000, timing.coefficient_of_variation * 100);
}

}  // namespace

TEST_CASE("run on GPU: mlp_et.pt2, which PyTorch's own loader crashes on, matches eager PyTorch") {
  PTB_REQUIRE_GPU();
  run_package("mlp_et");
}

TEST_CASE("run on GPU: mlp_et_ptx.pt2 (kernels with PTX) matches eager PyTorch") {
  PTB_REQUIRE_GPU();
  run_package("mlp_et_ptx");
}

TEST_CASE("run on GPU: a short or missing weights blob fails at load naming the key and the file") {
  PTB_REQUIRE_GPU();
  ScopedTmpdir tmp;
  auto part = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  PartWeights shorter = part->weights;
  shorter.blob = shorter.blob.first(3000);
  auto model = ptb::test::load_with(*part, shorter);
  REQUIRE_FALSE(model.ok());
  CHECK_CONTAINS(model.error().message, part->source + ": weights blob '" + part->weights.blob_key + "' holds 3000 bytes");
  CHECK_CONTAINS(model.error().message, "need 3200");

  auto unloaded = ptb::test::load_with(*part, PartWeights{});
  REQUIRE_FALSE(unloaded.ok());
  CHECK_CONTAINS(unloaded.error().message, "3 constants of the library have no value and the part has no weights");
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
}

TEST_CASE("run on GPU: a wrong-shape input is refused, not run") {
  PTB_REQUIRE_GPU();
  auto part = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  auto model = load_part(*part, {});  // a .pt2 has no signature: the library checks its inputs
  REQUIRE_MESSAGE(model.ok(), model.error().message);
  HostTensor wide;
  wide.scalar_type = 6;
  wide.shape = {4, 32};
  wide.data.assign(4 * 32 * 4, 0);
  auto refused = model->run({wide});
  REQUIRE_FALSE(refused.ok());
  CHECK_CONTAINS(refused.error().message, "the library failed to run");
  auto two = model->run({wide, wide});
  REQUIRE_FALSE(two.ok());
  CHECK_CONTAINS(two.error().message, "2 inputs given; the library takes 1");
  // The model still runs correct inputs afterwards.
  HostTensor input = npy_tensor(ptb::test::fixture("aoti/mlp_et.in0.npy"));
  CHECK(model->run({input}).ok());

  // Through the CLI: exit 1 with the reason, no crash.
  auto cli = ptb::test::run_cli("run " + ptb::test::quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --input 0=" +
                                ptb::test::quote(ptb::test::fixture("aoti/mlp_et.out0.npy")) + " --iterations 0");
  CHECK(cli.exit_code == 1);
  CHECK_CONTAINS(cli.err, "the library failed to run");
}

TEST_CASE("run on GPU: a library that is not an AOTInductor model is refused and leaves nothing behind") {
  PTB_REQUIRE_GPU();
  ScopedTmpdir tmp;
  auto part = open_run_part(ptb::test::fixture("cuda/sm90/model.pte").string(), this_gpu());
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  auto model = load_part(*part, {});
  REQUIRE_FALSE(model.ok());
  CHECK_CONTAINS(model.error().message, "does not export AOTInductorModelContainerCreateWithDevice");
  CHECK_MESSAGE(tmp.empty(), tmp.listing());

  std::vector<uint8_t> garbage(1000, 0x41);
  RunPart broken = *part;
  broken.library = Bytes(garbage.data(), garbage.size());
  auto bad = load_part(broken, {});
  REQUIRE_FALSE(bad.ok());
  // Refused while its ELF is read, before anything is written or loaded.
  CHECK_CONTAINS(bad.error().message, "not a 64-bit little-endian ELF header");
  CHECK_MESSAGE(tmp.empty(), tmp.listing());
}

TEST_CASE("run on GPU: the CLI runs a package, writes its output, checks it and times it") {
  PTB_REQUIRE_GPU();
  TempDir dir;
  auto result = ptb::test::run_cli("run " + ptb::test::quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --input " +
                                   ptb::test::quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + " --expect 0=" +
                                   ptb::test::quote(ptb::test::fixture("aoti/mlp_et.out0.npy")) +
                                   " --rtol 1e-5 --atol 1e-7 --warmup 5 --iterations 50 --json --output-dir " +
                                   ptb::test::quote(dir / "out"));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  auto doc = nlohmann::json::parse(result.out);
  CHECK(doc["part"] == "mlp_et");
  CHECK(doc["weights"]["layout"] == "blob");
  CHECK(doc["weights"]["bytes"] == 3200);
  CHECK(doc["outputs"][0]["shape"] == nlohmann::json::array({4, 8}));
  CHECK(doc["checks"][0]["passed"] == true);
  CHECK(doc["timing"]["iterations"] == 50);
  CHECK(doc["timing"]["min_ms"].get<double>() > 0);
  if (ptb::test::have_jsonschema()) CHECK_MESSAGE(ptb::test::schema_problem("run", result.out) == "", result.out);
  HostTensor written = npy_tensor(dir / "out" / "mlp_et.out0.npy");
  HostTensor expected = npy_tensor(ptb::test::fixture("aoti/mlp_et.out0.npy"));
  auto stats = compare_tensors(tensor_bytes(written), tensor_bytes(expected), Tolerance{1e-7, 1e-5});
  REQUIRE(stats.ok());
  CHECK(stats->passed());
  std::printf("[gpu] ptbundle run mlp_et.pt2: %s; %.0f calls/s\n", doc["verdict"].get<std::string>().c_str(),
              doc["timing"]["calls_per_second"].get<double>());

  // Too far from the expected values: exit 1 with the verdict.
  auto strict = ptb::test::run_cli("run " + ptb::test::quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --input " +
                                   ptb::test::quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + " --expect 0=" +
                                   ptb::test::quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + " --iterations 0");
  CHECK(strict.exit_code == 1);
  CHECK_CONTAINS(strict.err, "part mlp_et does not reproduce its test case (shape [4, 8], expected [4, 16]); export it again");

  // With --json the report still comes, with the verdict as its error and exit code 1.
  auto strict_json = ptb::test::run_cli("run " + ptb::test::quote(ptb::test::fixture("aoti/mlp_et.pt2")) + " --input " +
                                        ptb::test::quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + " --expect 0=" +
                                        ptb::test::quote(ptb::test::fixture("aoti/mlp_et.in0.npy")) + " --iterations 0 --json");
  CHECK(strict_json.exit_code == 1);
  auto failed = nlohmann::json::parse(strict_json.out);
  CHECK(failed["exit_code"] == 1);
  CHECK(failed["checks"][0]["passed"] == false);
  CHECK_CONTAINS(failed["errors"][0]["message"].get<std::string>(), "does not reproduce its test case");
  if (ptb::test::have_jsonschema()) CHECK_MESSAGE(ptb::test::schema_problem("run", strict_json.out) == "", strict_json.out);
}
