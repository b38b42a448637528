// What a library asks of its host, read from its ELF before it is loaded,
// and which runtime that makes it need: on small shared objects compiled in
// this build and on the real AOTInductor library in mlp_et.pt2 (linked to
// libtorch), checked against what `readelf -d` and `nm -D -u` say of it.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/kernels/aoti_shims.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/kernels/elf_imports.h"
#include "pt2_zip.h"
#include "support.h"

using namespace ptb;

namespace {

std::string test_elf(const char* name) { return std::string(PTB_TEST_ELF_DIR) + "/" + name; }

#define CHECK_CONTAINS(text, part) CHECK_MESSAGE((text).find(part) != std::string::npos, (text))

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("aoti imports: a link_libtorch=False-like object is served by the built-in runtime") {
  const auto bytes = ptb::test::read_bytes(test_elf("imports_builtin.so"));
  auto symbols = read_dynamic_symbols(Bytes(bytes.data(), bytes.size()), "imports_builtin.so");
  REQUIRE_MESSAGE(symbols.ok(), symbols.error().message);
  for (const char* name : {"aoti_torch_empty_strided", "aoti_torch_get_data_ptr", "aoti_torch_delete_tensor_object",
                           "cudaMalloc", "cudaMemcpy"})
    CHECK_MESSAGE(symbols->imports(name), name);
  CHECK(has(symbols->defined, "ptb_test_entry"));
  CHECK_FALSE(symbols->imports("ptb_test_entry"));
  CHECK(libtorch_dependencies(*symbols).empty());
  CHECK(missing_builtin_shims(symbols->undefined).empty());

  auto choice = choose_runtime(Bytes(bytes.data(), bytes.size()), "x.so", AotiRuntime::Auto, {true, false});
  REQUIRE_MESSAGE(choice.ok(), choice.error().message);
  CHECK(choice->kind == AotiRuntime::Builtin);
  CHECK_CONTAINS(choice->reason, "link_libtorch=False");
  auto forced = choose_runtime(Bytes(bytes.data(), bytes.size()), "x.so", AotiRuntime::LibTorch, {true, false});
  REQUIRE_FALSE(forced.ok());
  CHECK(forced.error().kind == ErrorKind::Usage);
  CHECK_CONTAINS(forced.error().message, "--runtime libtorch: this build has no LibTorch runtime");
}

TEST_CASE("aoti imports: every missing shim is named in one error with its fix, before anything is loaded") {
  const auto bytes = ptb::test::read_bytes(test_elf("imports_missing.so"));
  const Bytes library(bytes.data(), bytes.size());
  auto symbols = read_dynamic_symbols(library, "imports_missing.so");
  REQUIRE(symbols.ok());
  CHECK(missing_builtin_shims(symbols->undefined) ==
        std::vector<std::string>{"aoti_torch_cuda__fft_r2c",
                                 "aoti_torch_cuda__scaled_dot_product_efficient_attention_backward"});

  auto refused = choose_runtime(library, "model.pte: named data 'so'", AotiRuntime::Auto, {true, false});
  REQUIRE_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  CHECK(message.find('\n') == std::string::npos);
  CHECK_CONTAINS(message, "model.pte: named data 'so': the built-in AOTInductor runtime lacks 2 functions the "
                          "library imports:");
  CHECK_CONTAINS(message, "aoti_torch_cuda__scaled_dot_product_efficient_attention_backward (fix: export with "
                          "ExecuTorch's Triton SDPA");
  CHECK_CONTAINS(message, "or build ptbundle with LibTorch");
  CHECK_CONTAINS(message, "aoti_torch_cuda__fft_r2c (fix: an ATen operator the library falls back to");
  // Asking for the built-in runtime by name gives the same refusal; with
  // LibTorch in the build, auto hands the library to it and says why.
  auto forced = choose_runtime(library, "m.so", AotiRuntime::Builtin, {true, true});
  REQUIRE_FALSE(forced.ok());
  CHECK_CONTAINS(forced.error().message, "lacks 2 functions");
  auto handed = choose_runtime(library, "m.so", AotiRuntime::Auto, {true, true});
  REQUIRE(handed.ok());
  CHECK(handed->kind == AotiRuntime::LibTorch);
  CHECK_CONTAINS(handed->reason, "the built-in runtime lacks aoti_torch_cuda__fft_r2c");
}

TEST_CASE("aoti imports: mlp_et's library (PyTorch 2.11, linked to libtorch) needs the LibTorch runtime") {
  PTB_REQUIRE_FIXTURES();
  auto part = open_run_part(ptb::test::fixture("aoti/mlp_et.pt2").string(), RunPartOptions{});
  REQUIRE_MESSAGE(part.ok(), part.error().message);
  auto symbols = read_dynamic_symbols(part->library, "mlp_et.so");
  REQUIRE_MESSAGE(symbols.ok(), symbols.error().message);
  // readelf -d: NEEDED libtorch.so, libtorch_cpu.so, libcuda.so.1, libtorch_cuda.so, libgcc_s.so.1, libc.so.6,
  // ld-linux-x86-64.so.2.
  CHECK(symbols->needed == std::vector<std::string>{"libtorch.so", "libtorch_cpu.so", "libcuda.so.1",
                                                    "libtorch_cuda.so", "libgcc_s.so.1", "libc.so.6",
                                                    "ld-linux-x86-64.so.2"});
  CHECK(libtorch_dependencies(*symbols) ==
        std::vector<std::string>{"libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so"});
  // nm -D -u: 25 aoti_torch_* imports, the same as a link_libtorch=False
  // library's but for a cuBLAS matmul instead of Triton's; the
  // built-in runtime has every one (its GEMM shims call cuBLASLt).
  std::vector<std::string> shims;
  for (const auto& name : symbols->undefined)
    if (name.rfind("aoti_torch_", 0) == 0) shims.push_back(name);
  CHECK(shims.size() == 25);
  CHECK(missing_builtin_shims(symbols->undefined).empty());
  for (const char* cuda : {"cudaMalloc", "cudaMemcpy", "cudaEventQuery", "cuLaunchKernel", "cuModuleLoadData"})
    CHECK_MESSAGE(symbols->imports(cuda), cuda);
  CHECK(symbols->undefined.size() == 184);  // nm -D --undefined-only | wc -l
  CHECK(has(symbols->defined, "AOTInductorModelContainerRun"));

  auto libtorch = choose_runtime(part->library, "mlp_et.pt2", AotiRuntime::Auto, {true, true});
  REQUIRE(libtorch.ok());
  CHECK(libtorch->kind == AotiRuntime::LibTorch);
  CHECK(libtorch->reason == "the library is linked to LibTorch (libtorch.so, libtorch_cpu.so, libtorch_cuda.so)");
  auto without = choose_runtime(part->library, "mlp_et.pt2", AotiRuntime::Auto, {true, false});
  REQUIRE_FALSE(without.ok());
  CHECK_CONTAINS(without.error().message, "mlp_et.pt2: the library is linked to LibTorch (it needs libtorch.so, "
                                          "libtorch_cpu.so, libtorch_cuda.so and imports aoti_torch_");
  CHECK_CONTAINS(without.error().message, " from it; compiled with aot_inductor.link_libtorch=True, PyTorch's default), "
                                          "and this build has no LibTorch runtime");
  CHECK_CONTAINS(without.error().message, "aot_inductor.link_libtorch=False");
  auto builtin = choose_runtime(part->library, "mlp_et.pt2", AotiRuntime::Builtin, {true, true});
  REQUIRE_FALSE(builtin.ok());
  CHECK_CONTAINS(builtin.error().message, "the built-in runtime runs libraries compiled with");
}

TEST_CASE("aoti imports: damaged dynamic tables are errors naming the file") {
  auto bytes = ptb::test::read_bytes(test_elf("imports_builtin.so"));
  auto good = read_dynamic_symbols(Bytes(bytes.data(), bytes.size()), "x.so");
  REQUIRE(good.ok());
  // Point every .dynsym name past .dynstr.
  uint64_t shoff = 0;
  std::memcpy(&shoff, bytes.data() + 40, 8);
  uint16_t count = 0;
  std::memcpy(&count, bytes.data() + 60, 2);
  bool damaged = false;
  for (uint16_t i = 0; i < count && !damaged; ++i) {
    const size_t header = shoff + i * 64u;
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + header + 4, 4);
    if (type != 11) continue;  // SHT_DYNSYM
    uint64_t offset = 0, size = 0;
    std::memcpy(&offset, bytes.data() + header + 24, 8);
    std::memcpy(&size, bytes.data() + header + 32, 8);
    for (uint64_t at = offset + 24; at < offset + size; at += 24) {
      const uint32_t far = 0x7fffffff;
      std::memcpy(bytes.data() + at, &far, 4);
    }
    damaged = true;
  }
  REQUIRE(damaged);
  auto bad = read_dynamic_symbols(Bytes(bytes.data(), bytes.size()), "x.so");
  REQUIRE_FALSE(bad.ok());
  CHECK_CONTAINS(bad.error().message, "x.so: .dynsym entry at 0x");
  CHECK_CONTAINS(bad.error().message, "past its string table");
  auto truncated = read_dynamic_symbols(Bytes(bytes.data(), 100), "x.so");
  CHECK_FALSE(truncated.ok());
}

TEST_CASE("aoti imports: the ptbundle binary links neither LibTorch nor a CUDA runtime") {
  const auto bytes = ptb::test::read_bytes(PTB_CLI_PATH);
  auto symbols = read_dynamic_symbols(Bytes(bytes.data(), bytes.size()), PTB_CLI_PATH);
  REQUIRE_MESSAGE(symbols.ok(), symbols.error().message);
  for (const std::string& needed : symbols->needed) {
    CHECK_MESSAGE(needed.find("torch") == std::string::npos, needed);
    CHECK_MESSAGE(needed.find("c10") == std::string::npos, needed);
    CHECK_MESSAGE(needed.find("cudart") == std::string::npos, needed);
    CHECK_MESSAGE(needed.find("libcuda") == std::string::npos, needed);
  }
  CHECK_FALSE(symbols->imports("cudaMalloc"));
  CHECK_FALSE(has(symbols->defined, "aoti_torch_empty_strided"));
}

TEST_CASE("aoti imports: verify --gpu fails a package or bundle whose library imports a shim this build lacks") {
  // PyTorch's own weightless package (sm_90 kernels, link_libtorch=False),
  // its library's import of aoti_torch_empty_strided renamed in place to
  // aoti_torch_cuda__fft_r2c (same length): kernels that run on sm_90, in a
  // library the built-in runtime cannot serve. Found on a machine without
  // a GPU, as run would find it on one.
  if (RuntimeAvailability{}.libtorch) {
    ptb::test::skip("this build has a LibTorch runtime, which serves any import");
    return;
  }
  const auto here = ptb::test::fs::path(__FILE__).parent_path() / "packages";
  if (!ptb::test::fs::exists(here / "weightless.pt2")) {
    ptb::test::skip("tests/packages/weightless.pt2 is absent");
    return;
  }
  std::vector<ptb::test::ZipEntry> entries = ptb::test::zip_entries(here / "weightless.pt2");
  std::string& library = ptb::test::entry_ending(entries, ".wrapper.so")->bytes;
  size_t renamed = 0;
  for (size_t at = library.find("aoti_torch_empty_strided"); at != std::string::npos;
       at = library.find("aoti_torch_empty_strided", at + 1), ++renamed) {
    library.replace(at, 24, "aoti_torch_cuda__fft_r2c");
  }
  REQUIRE(renamed >= 1);
  ptb::test::TempDir dir;
  const ptb::test::fs::path package = dir / "lacking.pt2";
  ptb::test::write_zip(package, entries);

  auto direct = ptb::test::run_cli("verify " + ptb::test::quote(package) + " --gpu sm_90");
  CHECK(direct.exit_code == 1);
  CHECK_CONTAINS(direct.out, "this ptbundle cannot run its library");
  CHECK_CONTAINS(direct.out, "aoti_torch_cuda__fft_r2c");

  const ptb::test::fs::path bundle = dir / "bundle";
  auto exported = ptb::test::run_cli("export -o " + ptb::test::quote(bundle) + " --part w=" + ptb::test::quote(package) +
                                     " --example w=" + ptb::test::quote(here / "weightless.in0.npy") + "," +
                                     ptb::test::quote(here / "weightless.in1.npy") + ":" +
                                     ptb::test::quote(here / "weightless.out0.npy"));
  REQUIRE_MESSAGE(exported.exit_code == 0, (exported.out + exported.err));
  auto verified = ptb::test::run_cli("verify " + ptb::test::quote(bundle) + " --gpu sm_90");
  CHECK(verified.exit_code == 1);
  CHECK_CONTAINS(verified.out, "this ptbundle cannot run its library");
  CHECK_CONTAINS(verified.out, "aoti_torch_cuda__fft_r2c");
  // The unchanged package verifies on the same GPU.
  auto original = ptb::test::run_cli("verify " + ptb::test::quote(here / "weightless.pt2") + " --gpu sm_90");
  CHECK_MESSAGE(original.exit_code == 0, (original.out + original.err));
}
