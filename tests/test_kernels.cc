// scan_kernels on images nvcc built for the tests, on the real CUDA fixtures
// and AOTInductor packages, and on corrupted copies of them.
#include <cstring>
#include <random>

#include "kernel_images.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/kernels/triton_templates.h"

using namespace ptb;
using namespace ptb::test;

namespace {

uint32_t e_flags(const std::vector<uint8_t>& elf) {
  uint32_t flags = 0;
  std::memcpy(&flags, elf.data() + 48, 4);
  return flags;
}

template <class T>
void poke(std::vector<uint8_t>& bytes, size_t offset, T value) {
  REQUIRE(offset + sizeof value <= bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

Result<std::vector<KernelImage>> scan(const std::vector<uint8_t>& bytes) {
  return scan_kernels(Bytes(bytes.data(), bytes.size()), "bad.bin");
}

}  // namespace

TEST_CASE("kernels: bare cubins name their target, including 'a' and 'f' variants") {
  PTB_REQUIRE_TEST_KERNELS();
  const std::pair<const char*, const char*> cases[] = {
      {"sm80.cubin", "sm_80"},     {"sm86.cubin", "sm_86"},     {"sm90.cubin", "sm_90"},  {"sm90a.cubin", "sm_90a"},
      {"sm100a.cubin", "sm_100a"}, {"sm100f.cubin", "sm_100f"}, {"sm120.cubin", "sm_120"},
  };
  for (const auto& [file, target] : cases) {
    CAPTURE(file);
    const auto bytes = read_bytes(kernel_image(file));
    const auto images = scan_ok(bytes, file);
    REQUIRE(images.size() == 1);
    CHECK(images[0].kind == KernelKind::Cubin);
    CHECK(images[0].target() == target);
    CHECK(images[0].container == KernelContainer::Cubin);
    CHECK(images[0].offset == 0);
    CHECK(images[0].size == bytes.size());  // the ELF's parts end where the file ends
    CHECK_FALSE(images[0].compressed());
    CHECK(images[0].code_sections == 1);  // ptb_test_axpy
    CHECK(images[0].ptx_version().empty());
  }
}

TEST_CASE("kernels: ptxas 13 writes the same e_flags for sm_90 and sm_90a; .nv.compat tells them apart") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto plain = read_bytes(kernel_image("sm90.cubin"));
  const auto specific = read_bytes(kernel_image("sm90a.cubin"));
  CHECK(e_flags(plain) == 0x06005a04u);  // ABI 8 layout: SM 0x5a in bits 8-15
  CHECK(e_flags(specific) == e_flags(plain));
  CHECK(plain[8] == 8);  // EI_ABIVERSION
  CHECK(scan_ok(plain, "sm90")[0].variant == ArchVariant::Plain);
  CHECK(scan_ok(specific, "sm90a")[0].variant == ArchVariant::ArchSpecific);
  // Blackwell SM numbers above 0xff would not fit the old low-byte layout.
  CHECK(e_flags(read_bytes(kernel_image("sm120.cubin"))) == 0x06007802u);
}

TEST_CASE("kernels: PTX text and a PTX-only fatbin") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto text = scan_file_ok(kernel_image("compute75.ptx"));
  REQUIRE(text.size() == 1);
  CHECK(text[0].kind == KernelKind::Ptx);
  CHECK(text[0].target() == "compute_75");
  CHECK(text[0].ptx_version() == "9.0");  // nvcc 13.0 writes PTX ISA 9.0
  CHECK(text[0].container == KernelContainer::PtxText);

  const auto fatbin = scan_file_ok(kernel_image("compute75.fatbin"));
  REQUIRE(fatbin.size() == 1);
  CHECK(fatbin[0].kind == KernelKind::Ptx);
  CHECK(fatbin[0].target() == "compute_75");
  CHECK(fatbin[0].ptx_version() == "9.0");
  CHECK(fatbin[0].compression == "zstd");  // nvcc 13 compresses PTX by default
  CHECK(fatbin[0].container == KernelContainer::Fatbin);
  CHECK(fatbin[0].container_offset == 0);
  CHECK(fatbin[0].container_size == read_bytes(kernel_image("compute75.fatbin")).size());
}

TEST_CASE("kernels: fatbin compression as nvcc 13 writes it: default, -compress-all, speed (LZ4), none") {
  PTB_REQUIRE_TEST_KERNELS();
  struct Case {
    const char* file;
    const char* cubin_compression;
    const char* ptx_compression;
  };
  const Case cases[] = {
      {"sm80_compute80.fatbin", "", "zstd"},
      {"sm80_compute80_zstd.fatbin", "zstd", "zstd"},
      {"sm80_compute80_lz4.fatbin", "lz4", "lz4"},
      {"sm80_compute80_raw.fatbin", "", ""},
  };
  const auto plain_cubin_size = read_bytes(kernel_image("sm80.cubin")).size();
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const auto images = scan_file_ok(kernel_image(c.file));
    REQUIRE(images.size() == 2);
    CHECK(images[0].kind == KernelKind::Cubin);
    CHECK(images[0].target() == "sm_80");
    CHECK(images[0].compression == c.cubin_compression);
    CHECK(images[1].kind == KernelKind::Ptx);
    CHECK(images[1].target() == "compute_80");
    CHECK(images[1].ptx_version() == "9.0");
    CHECK(images[1].compression == c.ptx_compression);
    // The same cubin, whatever the fatbin did to it.
    CHECK(images[0].uncompressed_size == plain_cubin_size);
    if (images[0].compressed()) CHECK(images[0].size < images[0].uncompressed_size);
    if (images[1].compressed()) CHECK(images[1].size < images[1].uncompressed_size);
  }
}

TEST_CASE("kernels: fatbin entries carry the 'a' and 'f' variants for cubin and PTX") {
  PTB_REQUIRE_TEST_KERNELS();
  CHECK(target_list(scan_file_ok(kernel_image("sm90a_compute90a.fatbin"))) ==
        std::vector<std::string>{"compute_90a ptx", "sm_90a cubin"});
  CHECK(target_list(scan_file_ok(kernel_image("sm100f_compute100f.fatbin"))) ==
        std::vector<std::string>{"compute_100f ptx", "sm_100f cubin"});
  CHECK(target_list(scan_file_ok(kernel_image("sm120_compute120.fatbin"))) ==
        std::vector<std::string>{"compute_120 ptx", "sm_120 cubin"});
}

TEST_CASE("kernels: a shared library built for several targets") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto images = scan_file_ok(kernel_image("multi.so"));
  // nvlink's cudadevrt module (sm_80, sm_86, sm_90a cubins without code) and
  // the kernel's module (the same three plus compute_90 PTX).
  CHECK(target_list(images) == std::vector<std::string>{"compute_90 ptx", "sm_80 cubin", "sm_80 cubin", "sm_86 cubin",
                                                        "sm_86 cubin", "sm_90a cubin", "sm_90a cubin"});
  int with_code = 0;
  for (const KernelImage& image : images) {
    CHECK(image.location.starts_with("section .nv_fatbin, fatbin at "));
    CHECK(image.container == KernelContainer::Fatbin);
    if (image.code_sections > 0) ++with_code;
  }
  CHECK(with_code == 3);
}

TEST_CASE("kernels: the fixture libraries hold the target named by their file") {
  PTB_REQUIRE_FIXTURES();
  for (const char* target : {"80", "86", "89", "90", "120"}) {
    CAPTURE(target);
    const auto images = scan_file_ok(fixture(std::string("cuda/so/sm") + target + ".so"));
    REQUIRE(images.size() == 2);  // cudadevrt's empty module and the kernel's
    for (const KernelImage& image : images) {
      CHECK(image.target() == std::string("sm_") + target);
      CHECK(image.kind == KernelKind::Cubin);
      CHECK_FALSE(image.compressed());
    }
    CHECK(images[0].code_sections == 0);
    CHECK(images[1].code_sections == 1);  // et_fixture_linear
  }
  const auto ptx = scan_file_ok(fixture("cuda/so/compute75.so"));
  REQUIRE(ptx.size() == 1);
  CHECK(ptx[0].kind == KernelKind::Ptx);
  CHECK(ptx[0].target() == "compute_75");
  CHECK(ptx[0].ptx_version() == "9.0");
  CHECK(ptx[0].compression == "zstd");
  CHECK(ptx[0].location.starts_with("section .nv_fatbin"));
}

TEST_CASE("kernels: AOTInductor's embedded cubins are found in .rodata (mlp_et.pt2)") {
  PTB_REQUIRE_FIXTURES();
  const auto library = read_pt2_entry(fixture("aoti/mlp_et.pt2"), ".wrapper.so");
  const auto images = scan_ok(library, "mlp_et wrapper.so");
  REQUIRE(images.size() == 2);
  for (const KernelImage& image : images) {
    CHECK(image.kind == KernelKind::Cubin);
    CHECK(image.target() == "sm_90a");  // Inductor compiles for the exact GPU it runs on
    CHECK(image.container == KernelContainer::Cubin);
    CHECK(image.location.starts_with("section .rodata at "));
    CHECK(image.code_sections == 1);
    REQUIRE(image.functions.size() == 1);  // the kernel its .text.<kernel> section holds
    CHECK(image.functions[0].starts_with("triton_"));
  }
  // Small Linear layers become pointwise and reduction kernels, not templates: nothing to advise.
  CHECK(find_triton_templates(images).empty());
  CHECK(triton_template_note(find_triton_templates(images)).empty());
  CHECK(images[0].offset == 0x178c01);  // not aligned: found by signature, not by section start
  // The same two Triton kernels as mlp_sm90.pt2's separate .cubin files, by size.
  CHECK(images[0].size == 7248);
  CHECK(images[1].size == 7496);
}

TEST_CASE("kernels: with emit_multi_arch_kernel, AOTInductor embeds fatbins of cubin + PTX (mlp_et_ptx.pt2)") {
  PTB_REQUIRE_FIXTURES();
  const auto library = read_pt2_entry(fixture("aoti/mlp_et_ptx.pt2"), ".wrapper.so");
  const auto images = scan_ok(library, "mlp_et_ptx wrapper.so");
  CHECK(target_list(images) ==
        std::vector<std::string>{"compute_90a ptx", "compute_90a ptx", "sm_90a cubin", "sm_90a cubin"});
  for (const KernelImage& image : images) {
    CHECK(image.container == KernelContainer::Fatbin);
    CHECK(image.location.starts_with("section .rodata at "));
    if (image.kind == KernelKind::Ptx) {
      CHECK(image.compression == "zstd");
      CHECK(image.ptx_version() == "9.0");
    }
  }
  CHECK(images[0].container_offset == 0x178c01);
}

TEST_CASE("kernels: separate .cubin files of a default AOTInductor package (mlp_sm90.pt2)") {
  PTB_REQUIRE_FIXTURES();
  const auto library = read_pt2_entry(fixture("aoti/mlp_sm90.pt2"), ".wrapper.so");
  CHECK(scan_ok(library, "mlp_sm90 wrapper.so").empty());  // its kernels live beside it
  const auto first = scan_ok(read_pt2_entry(fixture("aoti/mlp_sm90.pt2"), "yja3efwv23qx5c.cubin"), "a.cubin");
  const auto second = scan_ok(read_pt2_entry(fixture("aoti/mlp_sm90.pt2"), "wipqxz4f2y6cxo.cubin"), "b.cubin");
  REQUIRE(first.size() == 1);
  REQUIRE(second.size() == 1);
  CHECK(first[0].target() == "sm_90a");
  CHECK(second[0].target() == "sm_90a");
  CHECK(first[0].size == 7248);
}

TEST_CASE("kernels: input that is none of the formats is an error at offset 0") {
  const std::string text = "just some text, no kernels";
  const std::vector<uint8_t> bytes(text.begin(), text.end());
  auto result = scan(bytes);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message.find("bad.bin: not an ELF file, a CUDA ELF (cubin), a fatbin or PTX text") == 0);
  CHECK_FALSE(scan({}).ok());
}

TEST_CASE("kernels: corrupt fatbins give clean errors naming the offset") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto good = read_bytes(kernel_image("sm80_compute80_raw.fatbin"));
  REQUIRE(scan(good).ok());

  SUBCASE("every truncation") {
    for (size_t length = 1; length < good.size(); ++length) {
      std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(length));
      auto result = scan(cut);
      if (length >= 16) {
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.find("bad.bin: fatbin at offset 0x0") == 0);
      } else {
        CHECK_FALSE(result.ok());
      }
    }
  }
  SUBCASE("container size past the end") {
    auto bad = good;
    poke<uint64_t>(bad, 8, ~0ull);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("its entries") != std::string::npos);
  }
  SUBCASE("entry header size huge") {
    auto bad = good;
    poke<uint32_t>(bad, 16 + 4, 0xfffffff0u);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("entry 0 at offset 0x10: header size 4294967280") != std::string::npos);
  }
  SUBCASE("entry header size below 64") {
    auto bad = good;
    poke<uint32_t>(bad, 16 + 4, 8u);
    CHECK_FALSE(scan(bad).ok());
  }
  SUBCASE("payload size huge") {
    auto bad = good;
    poke<uint64_t>(bad, 16 + 8, ~0ull - 8);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("runs past the container's end") != std::string::npos);
  }
  SUBCASE("entry SM disagrees with its cubin") {
    auto bad = good;
    poke<uint32_t>(bad, 16 + 28, 90u);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("says SM 90 but its cubin's e_flags say SM 80") != std::string::npos);
  }
  SUBCASE("compressed size larger than the payload") {
    auto zstd = read_bytes(kernel_image("sm80_compute80_zstd.fatbin"));
    poke<uint32_t>(zstd, 16 + 16, 0x7fffffffu);
    auto result = scan(zstd);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("compressed size 2147483647") != std::string::npos);
  }
  SUBCASE("cubin inside with a section table past its payload") {
    auto bad = good;
    poke<uint64_t>(bad, 16 + 64 + 40, 0x100000000ull);  // e_shoff of the entry's ELF
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("section headers at 0x100000000") != std::string::npos);
  }
}

TEST_CASE("kernels: corrupt cubins give clean errors") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto good = read_bytes(kernel_image("sm86.cubin"));
  SUBCASE("every truncation") {
    for (size_t length = 64; length < good.size(); ++length) {
      std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(length));
      auto result = scan(cut);
      REQUIRE_FALSE(result.ok());
      CHECK(result.error().message.find("bad.bin: ELF at offset 0x0: ") == 0);
    }
  }
  SUBCASE("section count past the end") {
    auto bad = good;
    poke<uint16_t>(bad, 60, 0xfe00);
    CHECK_FALSE(scan(bad).ok());
  }
  SUBCASE("a section with a huge offset") {
    auto bad = good;
    uint64_t section_table = 0;
    std::memcpy(&section_table, bad.data() + 40, 8);
    poke<uint64_t>(bad, section_table + 64 * 2 + 24, ~0ull - 4);  // section 2's sh_offset
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("section 2 at 0xfffffffffffffffb") != std::string::npos);
  }
  SUBCASE("section names index out of range") {
    auto bad = good;
    poke<uint16_t>(bad, 62, 999);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("e_shstrndx 999") != std::string::npos);
  }
  SUBCASE("an SM number of zero") {
    auto bad = good;
    poke<uint32_t>(bad, 48, 0x06000004u);
    auto result = scan(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().message.find("names SM 0") != std::string::npos);
  }
}

TEST_CASE("kernels: a corrupt cubin embedded in a library is reported at its offset") {
  PTB_REQUIRE_FIXTURES();
  auto library = read_pt2_entry(fixture("aoti/mlp_et.pt2"), ".wrapper.so");
  poke<uint64_t>(library, 0x178c01 + 40, 0x7fffffffffull);  // e_shoff of the first embedded cubin
  auto result = scan_kernels(Bytes(library.data(), library.size()), "wrapper.so");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().message.find("wrapper.so: ELF at offset 0x178c01: section headers at 0x7fffffffff") == 0);
}

TEST_CASE("kernels: random damage never reads out of bounds") {
  PTB_REQUIRE_TEST_KERNELS();
  std::mt19937 random(20240531);
  for (const char* file : {"sm80_compute80_raw.fatbin", "sm90a.cubin", "multi.so"}) {
    CAPTURE(file);
    const auto good = read_bytes(kernel_image(file));
    int refused = 0;
    for (int round = 0; round < 200; ++round) {
      CAPTURE(round);
      auto bad = good;
      for (int flips = 0; flips < 8; ++flips) {
        // Damage concentrates on headers, where the offsets and sizes are.
        const size_t limit = round % 2 ? bad.size() : std::min<size_t>(bad.size(), 512);
        bad[random() % limit] = static_cast<uint8_t>(random());
      }
      // AddressSanitizer catches any stray read; here, each answer is a clean
      // error naming the input, or images that lie inside the damaged bytes.
      auto result = scan(bad);
      if (!result.ok()) {
        ++refused;
        CHECK(result.error().message.rfind("bad.bin", 0) == 0);
        continue;
      }
      for (const KernelImage& image : *result) {
        CHECK(image.offset <= bad.size());
        CHECK(image.size <= bad.size() - image.offset);
      }
    }
    // Header damage must be noticed in some rounds, or the scan is not reading the headers.
    CHECK(refused > 0);
  }
}

TEST_CASE("kernels: Inductor's Triton templates are told apart by what they fuse") {
  // Names as Inductor writes them (examples/encoder.pt2 holds the first three).
  KernelImage image;
  image.functions = {"triton_tem_fused_addmm_convolution_mean_relu_t_7", "triton_tem_fused_convolution_2",
                     "triton_tem_fused_convolution_relu_5", "triton_poi_fused_addmm_tanh_8",
                     "triton_tem_fused_bmm_0", "triton_tem_fused_mmx_1", "triton_per_fused_convolution_mean_relu_6"};
  KernelImage same_kernels_for_another_target = image;
  const TritonTemplates templates = find_triton_templates({image, same_kernels_for_another_target});
  CHECK(templates.gemm == std::vector<std::string>{"triton_tem_fused_addmm_convolution_mean_relu_t_7", "triton_tem_fused_bmm_0"});
  CHECK(templates.convolution == std::vector<std::string>{"triton_tem_fused_convolution_2", "triton_tem_fused_convolution_relu_5"});
  const std::string note = triton_template_note(templates);
  CHECK(note.find("matrix products (2 kernels) and convolutions (2 kernels)") != std::string::npos);
  CHECK(note.find("max_autotune_gemm_backends=\"ATEN,TRITON\" and max_autotune_conv_backends=\"ATEN,TRITON\"") !=
        std::string::npos);
  CHECK(triton_template_note({{}, {"triton_tem_fused_convolution_0"}}).find("its convolutions (1 kernel)") !=
        std::string::npos);
}
