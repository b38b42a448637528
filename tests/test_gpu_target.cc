// One spelling of a GPU target for every reader and writer: the names the
// kernel scanner gives images, bundle.json's per-target programs and folders,
// merge and the program choice at run time (one parser, so that none reads
// "compute_90a" differently).
#include <doctest/doctest.h>

#include "ptbundle/kernels/compat.h"
#include "ptbundle/kernels/gpu_target.h"
#include "ptbundle/kernels/kernel_images.h"

using namespace ptb;

TEST_CASE("gpu target: every name nvcc writes parses and formats back the same") {
  for (const char* name : {"sm_50", "sm_90", "sm_90a", "sm_100f", "sm_120", "compute_75", "compute_90a", "compute_100f"}) {
    auto target = parse_gpu_target(name);
    REQUIRE_MESSAGE(target, name);
    CHECK(target->name() == name);
  }
  auto a = parse_gpu_target("compute_90a");
  CHECK(a->sm == 90);
  CHECK(a->ptx);
  CHECK(a->variant == ArchVariant::ArchSpecific);
  CHECK(parse_gpu_target("sm_100f")->variant == ArchVariant::Family);
}

TEST_CASE("gpu target: anything else is refused") {
  for (const char* name : {"", "sm_", "sm90", "sm_9.0", "sm_090", "sm_12345", "sm_90b", "sm_90af", "compute_", "compute_x",
                           "SM_90", "sm_-90", "sm_90 ", "../sm_90", "sm_90/x"}) {
    CHECK_MESSAGE(!parse_gpu_target(name), name);
    CHECK_MESSAGE(!is_gpu_target_name(name), name);
  }
}

TEST_CASE("gpu target: the scanner's names are the parser's, and the program choice takes them") {
  KernelImage image;
  image.sm = 90;
  image.variant = ArchVariant::ArchSpecific;
  image.kind = KernelKind::Ptx;
  CHECK(image.target() == "compute_90a");
  CHECK(is_gpu_target_name(image.target()));
  // compute_90a PTX is arch-specific: never chosen for another GPU, and the
  // exact cubin wins where there is one.
  auto choice = choose_target_program({"compute_90a", "sm_90"}, GpuCapability{9, 0});
  REQUIRE(choice.index);
  CHECK(*choice.index == 1);
  auto elsewhere = choose_target_program({"compute_90a"}, GpuCapability{10, 0});
  CHECK(!elsewhere.index);
}
