// The compatibility table, rule by rule, then on real images: which image the
// driver would take, what a refusal says, and the variant ExecuTorch picks
// from the merged payload its own merge wrote.
#include <nlohmann/json.hpp>

#include "kernel_images.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/kernels/compat.h"

using namespace ptb;
using namespace ptb::test;

using ptb::test::contains;

namespace {

KernelImage cubin(uint32_t sm, ArchVariant variant = ArchVariant::Plain) {
  KernelImage image;
  image.kind = KernelKind::Cubin;
  image.sm = sm;
  image.variant = variant;
  return image;
}

KernelImage ptx(uint32_t sm, ArchVariant variant = ArchVariant::Plain, uint32_t major = 9, uint32_t minor = 0) {
  KernelImage image = cubin(sm, variant);
  image.kind = KernelKind::Ptx;
  image.ptx_major = major;
  image.ptx_minor = minor;
  return image;
}

GpuCapability gpu(const char* text) {
  auto parsed = parse_capability(text);
  REQUIRE(parsed.ok());
  return *parsed;
}

constexpr uint32_t kCuda13 = 13000;

bool runs(const KernelImage& image, const char* on, uint32_t driver = kCuda13) {
  return judge_image(image, gpu(on), driver).runs;
}


}  // namespace

TEST_CASE("compat: capabilities are parsed from sm_86, 8.6, 86 and refused otherwise") {
  CHECK(gpu("sm_86") == GpuCapability{8, 6});
  CHECK(gpu("sm86") == GpuCapability{8, 6});
  CHECK(gpu("8.6") == GpuCapability{8, 6});
  CHECK(gpu("86") == GpuCapability{8, 6});
  CHECK(gpu("100") == GpuCapability{10, 0});
  CHECK(gpu("sm_121") == GpuCapability{12, 1});
  CHECK(gpu("10.3") == GpuCapability{10, 3});
  CHECK(gpu("sm_90").name() == "sm_90");
  for (const char* bad : {"", "sm_", "abc", "8.10", "8.", ".6", "sm_90a", "100f", "8.6.1", "-86", "5"}) {
    CAPTURE(bad);
    auto parsed = parse_capability(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().kind == ErrorKind::Usage);
  }
  CHECK(contains(parse_capability("sm_90a").error().message, "the 'a' suffix names a compiler target, not a GPU"));
}

TEST_CASE("compat rule: a cubin runs on its major version with the same or a higher minor") {
  CHECK(runs(cubin(80), "8.0"));
  CHECK(runs(cubin(80), "8.6"));
  CHECK(runs(cubin(80), "8.9"));
  CHECK_FALSE(runs(cubin(86), "8.0"));
  CHECK_FALSE(runs(cubin(89), "8.6"));
  CHECK_FALSE(runs(cubin(80), "9.0"));  // no cubin crosses a major version
  CHECK_FALSE(runs(cubin(90), "10.0"));
  CHECK_FALSE(runs(cubin(90), "8.9"));
  CHECK(runs(cubin(100), "10.3"));
  CHECK(runs(cubin(120), "12.1"));
  CHECK_FALSE(runs(cubin(121), "12.0"));
  const auto verdict = judge_image(cubin(86), gpu("8.0"), kCuda13);
  CHECK_FALSE(verdict.jit);
  CHECK(verdict.reason == "sm_86 cubin runs only on 8.x GPUs from 8.6, not on sm_80 (8.0)");
}

TEST_CASE("compat rule: an architecture-specific cubin runs only on exactly its GPU") {
  CHECK(runs(cubin(90, ArchVariant::ArchSpecific), "9.0"));
  CHECK_FALSE(runs(cubin(90, ArchVariant::ArchSpecific), "10.0"));
  CHECK(runs(cubin(100, ArchVariant::ArchSpecific), "10.0"));
  CHECK_FALSE(runs(cubin(100, ArchVariant::ArchSpecific), "10.3"));  // a plain sm_100 cubin would
  CHECK_FALSE(runs(cubin(120, ArchVariant::ArchSpecific), "12.1"));
  CHECK(judge_image(cubin(90, ArchVariant::ArchSpecific), gpu("sm_100"), kCuda13).reason ==
        "sm_90a cubin is architecture-specific: it runs only on sm_90, not on sm_100 (10.0)");
}

TEST_CASE("compat rule: a family cubin runs within its family") {
  CHECK(runs(cubin(100, ArchVariant::Family), "10.0"));
  CHECK(runs(cubin(100, ArchVariant::Family), "10.3"));
  CHECK_FALSE(runs(cubin(103, ArchVariant::Family), "10.0"));
  CHECK_FALSE(runs(cubin(100, ArchVariant::Family), "11.0"));
  CHECK_FALSE(runs(cubin(100, ArchVariant::Family), "12.0"));
  CHECK(runs(cubin(120, ArchVariant::Family), "12.1"));
}

TEST_CASE("compat rule: PTX is compiled by the driver for any GPU at or above its target") {
  for (const char* on : {"7.5", "8.0", "8.6", "9.0", "10.0", "12.1"}) {
    CAPTURE(on);
    const auto verdict = judge_image(ptx(75), gpu(on), kCuda13);
    CHECK(verdict.runs);
    CHECK(verdict.jit);
  }
  CHECK_FALSE(runs(ptx(75), "7.0"));
  CHECK_FALSE(runs(ptx(90), "8.9"));
  CHECK(runs(ptx(90), "12.0"));
}

TEST_CASE("compat rule: architecture-specific PTX is not portable; family PTX stays in its family") {
  CHECK(runs(ptx(90, ArchVariant::ArchSpecific), "9.0"));
  CHECK_FALSE(runs(ptx(90, ArchVariant::ArchSpecific), "10.0"));
  CHECK_FALSE(runs(ptx(120, ArchVariant::ArchSpecific), "12.1"));
  CHECK(runs(ptx(100, ArchVariant::Family), "10.3"));
  CHECK_FALSE(runs(ptx(100, ArchVariant::Family), "12.0"));
}

TEST_CASE("compat rule: the driver must know the PTX ISA version") {
  CHECK(driver_version_for_ptx(9, 0) == 13000);
  CHECK(driver_version_for_ptx(8, 7) == 12080);
  CHECK(driver_version_for_ptx(8, 6) == 12070);  // there was no ISA 8.6 toolkit before 12.7
  CHECK(driver_version_for_ptx(7, 8) == 11080);
  CHECK(driver_version_for_ptx(9, 3) == 13030);  // newer than the table: 9.x came with 13.x
  CHECK(cuda_version_name(12080) == "12.8");

  const auto old_driver = judge_image(ptx(75, ArchVariant::Plain, 9, 0), gpu("8.6"), 12080);
  CHECK_FALSE(old_driver.runs);
  CHECK(old_driver.reason ==
        "compute_75 PTX: PTX ISA 9.0 needs a driver for CUDA 13.0 or newer; this driver supports CUDA 12.8");
  CHECK(runs(ptx(75, ArchVariant::Plain, 8, 7), "8.6", 12080));
  const auto unknown_driver = judge_image(ptx(75), gpu("8.6"), 0);
  CHECK(unknown_driver.runs);
  CHECK(contains(unknown_driver.reason, "driver unknown"));
}

TEST_CASE("compat: the driver's pick prefers a cubin, then the highest target") {
  const std::vector<KernelImage> images = [] {
    std::vector<KernelImage> list = {cubin(80), cubin(86), ptx(80)};
    for (KernelImage& image : list) {
      image.container = KernelContainer::Fatbin;
      image.container_offset = 16;
      image.location = "fatbin at 0x10, entry";
    }
    return list;
  }();
  auto on_89 = judge_kernels(images, gpu("8.9"), kCuda13);
  CHECK(on_89.runs);
  REQUIRE(on_89.modules.size() == 1);
  CHECK(on_89.modules[0].chosen == 1u);  // sm_86 over sm_80 and the PTX
  CHECK(on_89.message == "runs on sm_89: 1 module using sm_86 cubin");
  auto on_90 = judge_kernels(images, gpu("9.0"), kCuda13);
  CHECK(on_90.runs);
  CHECK(on_90.modules[0].chosen == 2u);  // only the PTX is left
  CHECK(on_90.images[2].jit);
  auto on_75 = judge_kernels(images, gpu("7.5"), kCuda13);
  CHECK_FALSE(on_75.runs);
  CHECK_FALSE(on_75.modules[0].chosen.has_value());
}

TEST_CASE("compat: no device code is nothing to check") {
  const auto verdict = judge_kernels({}, gpu("8.0"), kCuda13);
  CHECK(verdict.runs);
  CHECK(verdict.message == "no CUDA device code found: nothing to check on sm_80");
}

TEST_CASE("compat: AOTInductor's sm_90a kernels run only on sm_90, and the refusal says what would help") {
  PTB_REQUIRE_FIXTURES();
  const auto images = scan_ok(read_pt2_entry(fixture("aoti/mlp_et.pt2"), ".wrapper.so"), "mlp_et");
  const auto on_h200 = judge_kernels(images, gpu("sm_90"), kCuda13);
  CHECK(on_h200.runs);
  CHECK(on_h200.modules.size() == 2);  // each embedded cubin is its own module
  CHECK(on_h200.message == "runs on sm_90: 2 modules using sm_90a cubin");

  const auto on_a100 = judge_kernels(images, gpu("sm_80"), kCuda13);
  CHECK_FALSE(on_a100.runs);
  CHECK(contains(on_a100.message, "cannot run on sm_80: it has sm_90a cubin; 2 of 2 modules have no image"));
  CHECK(contains(on_a100.message, "sm_90a cubin is architecture-specific: it runs only on sm_90, not on sm_80 (8.0)"));
  CHECK(contains(on_a100.message, "export it on an sm_80 GPU"));
  CHECK(contains(on_a100.message, "or export it with PTX for compute_80 or lower without the 'a' suffix"));

  // Its PTX is compute_90a: no help on a Blackwell GPU either.
  const auto ptx_images = scan_ok(read_pt2_entry(fixture("aoti/mlp_et_ptx.pt2"), ".wrapper.so"), "mlp_et_ptx");
  CHECK(judge_kernels(ptx_images, gpu("sm_90"), kCuda13).runs);
  const auto on_b200 = judge_kernels(ptx_images, gpu("sm_100"), kCuda13);
  CHECK_FALSE(on_b200.runs);
  CHECK(contains(on_b200.message, "it has sm_90a cubin, compute_90a PTX"));
}

TEST_CASE("compat: the fixture libraries on the GPUs around them") {
  PTB_REQUIRE_FIXTURES();
  struct Case {
    const char* file;
    const char* gpu;
    bool runs;
  };
  const Case cases[] = {
      {"sm80.so", "8.0", true},   {"sm80.so", "8.6", true},   {"sm80.so", "9.0", false},
      {"sm86.so", "8.0", false},  {"sm89.so", "8.9", true},   {"sm90.so", "9.0", true},
      {"sm90.so", "10.0", false}, {"sm120.so", "12.1", true}, {"sm120.so", "10.0", false},
      {"compute75.so", "7.5", true}, {"compute75.so", "9.0", true}, {"compute75.so", "12.0", true},
      {"compute75.so", "7.0", false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.gpu);
    const auto images = scan_file_ok(fixture(std::string("cuda/so/") + c.file));
    const auto verdict = judge_kernels(images, gpu(c.gpu), kCuda13);
    CHECK(verdict.runs == c.runs);
  }
}

TEST_CASE("compat: a library whose only module without code lacks a target still runs through its PTX") {
  PTB_REQUIRE_TEST_KERNELS();
  const auto images = scan_file_ok(kernel_image("multi.so"));
  const auto verdict = judge_kernels(images, gpu("10.0"), kCuda13);
  CHECK(verdict.runs);
  REQUIRE(verdict.modules.size() == 2);
  CHECK_FALSE(verdict.modules[0].has_code);
  CHECK_FALSE(verdict.modules[0].runs);  // cuModuleLoadData would refuse it, and nothing launches from it
  CHECK(verdict.modules[1].runs);
  CHECK(verdict.message == "runs on sm_100: 1 module using compute_90 PTX (compiled by the driver)");
}

TEST_CASE("compat: ExecuTorch's variant choice on the payload its own merge wrote") {
  PTB_REQUIRE_FIXTURES();
  const auto dump = nlohmann::json::parse(read_text(fixture("cuda/merged_reference/dump.json")));
  std::vector<VariantTarget> variants;
  for (const auto& delegate : dump["pte"]["program"]["execution_plans"][0]["delegates"]) {
    for (const auto& variant : delegate["cuda_aoti_metadata"]["variants"])
      variants.push_back({variant["target_sm"].get<uint32_t>(), variant["ptx_compute"].get<uint32_t>(),
                          variant["fallback_only"].get<bool>()});
  }
  REQUIRE(variants.size() == 4);  // sm80, sm90, sm120, compute_75 fallback

  const auto on_h200 = choose_variant(variants, gpu("sm_90"));
  CHECK(on_h200.runs);
  CHECK(on_h200.index == 1u);
  CHECK_FALSE(on_h200.uses_ptx);
  CHECK(on_h200.message == "ExecuTorch loads variant 1 (sm_90), native for sm_90");

  const auto on_86 = choose_variant(variants, gpu("sm_86"));  // not sm_80: the match is exact
  CHECK(on_86.runs);
  CHECK(on_86.index == 3u);
  CHECK(on_86.uses_ptx);

  const auto on_70 = choose_variant(variants, gpu("sm_70"));
  CHECK_FALSE(on_70.runs);
  CHECK(on_70.message ==
        "no variant for sm_70: the payload has sm_80, sm_90, sm_120, sm_75 + compute_75 PTX (fallback); ExecuTorch "
        "takes a variant only for exactly sm_70 or a PTX fallback for compute_70 or lower; to run there, export on an "
        "sm_70 GPU and merge that export in, or merge in a PTX fallback exported for compute_70 or lower");
}

TEST_CASE("compat: ExecuTorch's variant choice, rule by rule") {
  const std::vector<VariantTarget> natives = {{80, 0, false}, {90, 0, false}, {120, 0, false}};
  const auto on_86 = choose_variant(natives, gpu("8.6"));
  CHECK_FALSE(on_86.runs);
  CHECK(contains(on_86.message, "(the sm_80 cubin could run on sm_86, but ExecuTorch does not pick it)"));
  CHECK(choose_variant(natives, gpu("12.0")).index == 2u);

  // A sole variant: its PTX serves any GPU at or above it.
  const std::vector<VariantTarget> sole = {{80, 80, false}};
  CHECK(choose_variant(sole, gpu("8.0")).index == 0u);
  const auto sole_on_90 = choose_variant(sole, gpu("9.0"));
  CHECK(sole_on_90.runs);
  CHECK(sole_on_90.uses_ptx);
  CHECK_FALSE(choose_variant(sole, gpu("7.5")).runs);

  // An older payload without targets is taken as is.
  const auto untargeted = choose_variant({{0, 0, false}}, gpu("7.5"));
  CHECK(untargeted.runs);
  CHECK(untargeted.index == 0u);

  // The fallback is used only after no exact native match.
  const std::vector<VariantTarget> with_fallback = {{90, 0, false}, {80, 80, true}};
  CHECK(choose_variant(with_fallback, gpu("9.0")).index == 0u);
  CHECK(choose_variant(with_fallback, gpu("10.0")).index == 1u);
  CHECK_FALSE(choose_variant(with_fallback, gpu("7.5")).runs);
  CHECK_FALSE(choose_variant({}, gpu("9.0")).runs);
}

TEST_CASE("compat: variant_targets keeps what the runtime chooses by") {
  std::vector<CudaVariant> decoded(2);
  decoded[0].target_sm = 90;
  decoded[0].so_key = "a_so_blob";
  decoded[1].target_sm = 75;
  decoded[1].ptx_compute = 75;
  decoded[1].fallback_only = true;
  const auto targets = variant_targets(decoded);
  REQUIRE(targets.size() == 2);
  CHECK(targets[1].ptx_compute == 75);
  CHECK(targets[1].fallback_only);
  CHECK(targets[0].target_sm == 90);
}
