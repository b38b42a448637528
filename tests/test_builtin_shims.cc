// The built-in AOTInductor runtime's shims and tensor type, called directly
// on host tensors (no GPU needed), and the shim table kept equal to the
// module's exports and to the declarations in libruntime/shims/shims.h.
#include <dlfcn.h>

#include <cstring>
#include <fstream>

#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/kernels/aoti_shims.h"
#include "ptbundle/kernels/elf_imports.h"
#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "shims/shims.h"
#include "engines/tensor.h"
#endif

using namespace ptb;

// Without the built-in runtime's core (no CUDA toolkit at configure time)
// the cases that call the shims directly say SKIPPED with the reason.
#define PTB_SKIP_WITHOUT_SHIM_CORE() \
  ::ptb::test::skip("this build has no built-in runtime core (" PTB_BUILTIN_RUNTIME_STATUS ")")

#if defined(PTB_TEST_SHIM_CORE)

using namespace ptb::builtin;

namespace {

// A handle deleted at the end of the test.
struct Handle {
  AtenTensorHandle h = nullptr;
  ~Handle() {
    if (h) aoti_torch_delete_tensor_object(h);
  }
};

std::vector<int64_t> sizes_of(AtenTensorHandle h) {
  int64_t dim = 0, *sizes = nullptr;
  REQUIRE(aoti_torch_get_dim(h, &dim) == kShimSuccess);
  REQUIRE(aoti_torch_get_sizes(h, &sizes) == kShimSuccess);
  return std::vector<int64_t>(sizes, sizes + dim);
}

std::vector<int64_t> strides_of(AtenTensorHandle h) {
  int64_t dim = 0, *strides = nullptr;
  REQUIRE(aoti_torch_get_dim(h, &dim) == kShimSuccess);
  REQUIRE(aoti_torch_get_strides(h, &strides) == kShimSuccess);
  return std::vector<int64_t>(strides, strides + dim);
}

}  // namespace

#endif  // PTB_TEST_SHIM_CORE

TEST_CASE("built-in runtime shims: dtype, device and layout numbers are c10's, element sizes by dtype") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  CHECK(aoti_torch_dtype_float32() == 6);
  CHECK(aoti_torch_dtype_int64() == 4);
  CHECK(aoti_torch_dtype_bfloat16() == 15);
  CHECK(aoti_torch_dtype_float16() == 5);
  CHECK(aoti_torch_dtype_bool() == 11);
  CHECK(aoti_torch_dtype_uint8() == 0);
  CHECK(aoti_torch_dtype_float8_e4m3fn() == 24);
  CHECK(aoti_torch_dtype_uint64() == 29);
  CHECK(aoti_torch_device_type_cpu() == 0);
  CHECK(aoti_torch_device_type_cuda() == 1);
  CHECK(aoti_torch_layout_strided() == 0);
  CHECK(aoti_torch_memory_format_channels_last() == 2);
  CHECK(aoti_torch_dtype_element_size(aoti_torch_dtype_float32()) == 4);
  CHECK(aoti_torch_dtype_element_size(aoti_torch_dtype_bfloat16()) == 2);
  CHECK(aoti_torch_dtype_element_size(aoti_torch_dtype_complex128()) == 16);
  CHECK(aoti_torch_dtype_element_size(aoti_torch_dtype_float8_e5m2()) == 1);
  CHECK(aoti_torch_dtype_element_size(99) == 0);
  aoti_torch_grad_mode_set_enabled(true);
  CHECK(aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(false);
  CHECK_FALSE(aoti_torch_grad_mode_is_enabled());
#endif
}

TEST_CASE("built-in runtime shims: strides, storage extent and view checks") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  CHECK(contiguous_strides({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
  CHECK(contiguous_strides({2, 0, 4}) == std::vector<int64_t>{4, 4, 1});
  CHECK(contiguous_strides({}) == std::vector<int64_t>{});
  CHECK(storage_elements_needed({2, 3}, {3, 1}, 0) == 6u);
  CHECK(storage_elements_needed({2, 3}, {1, 2}, 5) == 11u);  // transposed view at offset 5
  CHECK(storage_elements_needed({4, 0}, {1, 1}, 7) == 0u);   // empty: reaches nothing
  CHECK(storage_elements_needed({}, {}, 3) == 4u);           // a scalar at offset 3
  CHECK_FALSE(storage_elements_needed({2}, {-1}, 0));
  CHECK_FALSE(storage_elements_needed({2}, {1}, -1));
  CHECK_FALSE(storage_elements_needed({INT64_MAX, 3}, {INT64_MAX, 1}, 0));
  CHECK(check_view({2, 3}, {3, 1}, 0, ScalarType::Float, 24).ok());
  CHECK(check_view({2, 3}, {3, 1}, 1, ScalarType::Float, 24).error().message ==
        "the view reaches 28 bytes of a 24-byte storage");
  CHECK(check_view({2}, {1}, 0, 99, 1024).error().message == "unknown dtype 99");
  CHECK(check_view({2, 3}, {1}, 0, ScalarType::Float, 1024).error().message == "sizes and strides differ in length");
#endif
}

TEST_CASE("built-in runtime shims: empty_strided, getters, views sharing a storage, delete") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  const int64_t sizes[] = {2, 3};
  const int64_t strides[] = {3, 1};
  Handle base;
  REQUIRE(aoti_torch_empty_strided(2, sizes, strides, aoti_torch_dtype_float32(), aoti_torch_device_type_cpu(), 0,
                                   &base.h) == kShimSuccess);
  CHECK(sizes_of(base.h) == std::vector<int64_t>{2, 3});
  CHECK(strides_of(base.h) == std::vector<int64_t>{3, 1});
  int64_t value = 0;
  REQUIRE(aoti_torch_get_storage_size(base.h, &value) == kShimSuccess);
  CHECK(value == 24);
  REQUIRE(aoti_torch_get_numel(base.h, &value) == kShimSuccess);
  CHECK(value == 6);
  REQUIRE(aoti_torch_get_storage_offset(base.h, &value) == kShimSuccess);
  CHECK(value == 0);
  REQUIRE(aoti_torch_get_size(base.h, -1, &value) == kShimSuccess);
  CHECK(value == 3);
  CHECK(aoti_torch_get_size(base.h, 2, &value) == kShimFailure);
  int32_t code = -1;
  REQUIRE(aoti_torch_get_dtype(base.h, &code) == kShimSuccess);
  CHECK(code == 6);
  REQUIRE(aoti_torch_get_device_type(base.h, &code) == kShimSuccess);
  CHECK(code == 0);
  bool contiguous = false;
  REQUIRE(aoti_torch_is_contiguous(base.h, &contiguous) == kShimSuccess);
  CHECK(contiguous);
  void* data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(base.h, &data) == kShimSuccess);
  REQUIRE(data != nullptr);
  auto* floats = static_cast<float*>(data);
  for (int i = 0; i < 6; ++i) floats[i] = static_cast<float>(i);

  // The transpose as a view at offset 1 of the same storage: [3, 1] over 5 elements.
  Handle view;
  const int64_t view_sizes[] = {2, 2};
  const int64_t view_strides[] = {1, 3};
  REQUIRE(aoti_torch__reinterpret_tensor(base.h, 2, view_sizes, view_strides, 1, &view.h) == kShimSuccess);
  void* view_data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(view.h, &view_data) == kShimSuccess);
  CHECK(static_cast<float*>(view_data) == floats + 1);
  REQUIRE(aoti_torch_is_contiguous(view.h, &contiguous) == kShimSuccess);
  CHECK_FALSE(contiguous);
  REQUIRE(aoti_torch_get_storage_size(view.h, &value) == kShimSuccess);
  CHECK(value == 24);  // the storage's, not the view's
  // A view of that view: the offset adds to the view's own (ATen's
  // _reinterpret_tensor), so offset 2 from the view at 1 starts at 3.
  Handle nested;
  const int64_t one_size[] = {2};
  const int64_t one_stride[] = {1};
  REQUIRE(aoti_torch__reinterpret_tensor(view.h, 1, one_size, one_stride, 2, &nested.h) == kShimSuccess);
  REQUIRE(aoti_torch_get_storage_offset(nested.h, &value) == kShimSuccess);
  CHECK(value == 3);
  void* nested_data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(nested.h, &nested_data) == kShimSuccess);
  CHECK(static_cast<float*>(nested_data) == floats + 3);
  CHECK(*static_cast<float*>(nested_data) == 3.0f);
  // Past the end from the view's offset: 1 + 4 + 2 elements of 6.
  AtenTensorHandle nested_past = nullptr;
  CHECK(aoti_torch__reinterpret_tensor(view.h, 1, one_size, one_stride, 4, &nested_past) == kShimFailure);
  CHECK(nested_past == nullptr);
  // A view past the storage's end is refused.
  AtenTensorHandle past = nullptr;
  CHECK(aoti_torch__reinterpret_tensor(base.h, 2, view_sizes, view_strides, 3, &past) == kShimFailure);
  CHECK(past == nullptr);

  // A new handle outlives the one it came from; the storage lives on.
  Handle copy;
  REQUIRE(aoti_torch_new_tensor_handle(view.h, &copy.h) == kShimSuccess);
  REQUIRE(aoti_torch_delete_tensor_object(base.h) == kShimSuccess);
  base.h = nullptr;
  REQUIRE(aoti_torch_delete_tensor_object(view.h) == kShimSuccess);
  view.h = nullptr;
  void* copy_data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(copy.h, &copy_data) == kShimSuccess);
  CHECK(static_cast<float*>(copy_data)[3] == 4.0f);  // element [1, 1] of the view: storage index 1 + 1 + 3

  // Clones: contiguous, or with the strides kept.
  Handle clone, kept;
  REQUIRE(aoti_torch_clone(copy.h, &clone.h) == kShimSuccess);
  CHECK(strides_of(clone.h) == std::vector<int64_t>{2, 1});
  REQUIRE(aoti_torch_get_data_ptr(clone.h, &data) == kShimSuccess);
  const float* cloned = static_cast<float*>(data);
  CHECK(std::vector<float>(cloned, cloned + 4) == std::vector<float>{1, 4, 2, 5});
  REQUIRE(aoti_torch_clone_preserve_strides(copy.h, &kept.h) == kShimSuccess);
  CHECK(strides_of(kept.h) == std::vector<int64_t>{1, 3});
  REQUIRE(aoti_torch_get_storage_offset(kept.h, &value) == kShimSuccess);
  CHECK(value == 0);
  REQUIRE(aoti_torch_get_storage_size(kept.h, &value) == kShimSuccess);
  CHECK(value == 5 * 4);  // (2-1)*1 + (2-1)*3 + 1 elements
  REQUIRE(aoti_torch_get_data_ptr(kept.h, &data) == kShimSuccess);
  CHECK(static_cast<float*>(data)[4] == 5.0f);

  // copy_ between layouts; zero_.
  REQUIRE(aoti_torch_zero_(clone.h) == kShimSuccess);
  REQUIRE(aoti_torch_copy_(clone.h, kept.h, 0) == kShimSuccess);
  CHECK(std::vector<float>(cloned, cloned + 4) == std::vector<float>{1, 4, 2, 5});
#endif
}

TEST_CASE("built-in runtime shims: create_tensor_from_blob borrows; bad arguments fail without a handle") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  std::vector<int64_t> values{10, 11, 12, 13, 14, 15};
  const int64_t sizes[] = {3};
  const int64_t strides[] = {2};
  Handle lent;
  REQUIRE(aoti_torch_create_tensor_from_blob_v2(values.data(), 1, sizes, strides, 1, aoti_torch_dtype_int64(),
                                                aoti_torch_device_type_cpu(), 0, &lent.h,
                                                aoti_torch_layout_strided(), nullptr, 0) == kShimSuccess);
  void* data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(lent.h, &data) == kShimSuccess);
  CHECK(data == values.data() + 1);
  int64_t bytes = 0;
  REQUIRE(aoti_torch_get_storage_size(lent.h, &bytes) == kShimSuccess);
  CHECK(bytes == 6 * 8);  // what the view reaches: offset 1 + 2 * 2 + 1 elements
  REQUIRE(aoti_torch_delete_tensor_object(lent.h) == kShimSuccess);
  lent.h = nullptr;
  CHECK(values[5] == 15);  // borrowed memory is left alone

  AtenTensorHandle none = nullptr;
  CHECK(aoti_torch_create_tensor_from_blob(values.data(), 1, sizes, strides, 0, 99, 0, 0, &none) == kShimFailure);
  CHECK(aoti_torch_create_tensor_from_blob_v2(values.data(), 1, sizes, strides, 0, 4, 0, 0, &none,
                                              aoti_torch_layout_sparse_coo(), nullptr, 0) == kShimFailure);
  CHECK(aoti_torch_empty_strided(1, sizes, strides, 6, aoti_torch_device_type_mps(), 0, &none) == kShimFailure);
  const int64_t negative[] = {-1};
  CHECK(aoti_torch_empty_strided(1, negative, nullptr, 6, 0, 0, &none) == kShimFailure);
  CHECK(none == nullptr);
  CHECK(aoti_torch_get_data_ptr(nullptr, &data) == kShimFailure);
#endif
}

// Every row of the table is declared in shims.h with C linkage: a row
// without its declaration does not compile here.
TEST_CASE("built-in runtime shims: every row of the shim table is declared") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  size_t declared = 0;
#define PTB_SHIM(name, family, library, fix) \
  CHECK(reinterpret_cast<const void*>(&name) != nullptr);  \
  ++declared;
#include "ptbundle/kernels/aoti_shim_table.inc"
#undef PTB_SHIM
  CHECK(declared == builtin_runtime_shims().size());
#endif
}


// The module must load on its own, with every symbol bound now (none left
// for libcuda to provide).
// Loading it needs no GPU; its CUDA runtime looks for the driver only at its
// first call.
TEST_CASE("built-in runtime shims: the module loads on its own, every symbol bound") {
#if !defined(PTB_TEST_BUILTIN_MODULE)
  ptb::test::skip("this build has no built-in runtime (" PTB_BUILTIN_RUNTIME_STATUS ")");
#else
  void* module = ::dlopen(PTB_TEST_BUILTIN_MODULE, RTLD_NOW | RTLD_LOCAL);
  const char* why = module ? "" : ::dlerror();
  REQUIRE_MESSAGE(module != nullptr, why);
  CHECK(::dlsym(module, "ptbundle_runtime_module") != nullptr);
  ::dlclose(module);
#endif
}

// man/ptbundle-run.1 lists every shim (scripts/shim-row writes the list).
TEST_CASE("built-in runtime shims: the man page lists every row of the shim table") {
  const std::vector<uint8_t> page = ptb::test::read_bytes(PTB_SOURCE_DIR "/man/ptbundle-run.1");
  const std::string text(page.begin(), page.end());
  for (const AotiShim& row : builtin_runtime_shims()) {
    std::string escaped;
    for (char c : row.name) escaped += c == '_' ? std::string("\\_") : std::string(1, c);
    const std::string missing = std::string(row.name) + " is not in man/ptbundle-run.1; run scripts/shim-row";
    CHECK_MESSAGE(text.find(escaped) != std::string::npos, missing);
  }
}

TEST_CASE("built-in runtime shims: the module exports exactly the listed shims, the CUDA runtime and its entry") {
#if !defined(PTB_TEST_BUILTIN_MODULE)
  ptb::test::skip("this build has no built-in runtime (" PTB_BUILTIN_RUNTIME_STATUS ")");
#else
  const std::vector<uint8_t> module = ptb::test::read_bytes(PTB_TEST_BUILTIN_MODULE);
  auto symbols = read_dynamic_symbols(Bytes(module.data(), module.size()), PTB_TEST_BUILTIN_MODULE);
  REQUIRE_MESSAGE(symbols.ok(), symbols.error().message);
  std::vector<std::string> shims, others;
  for (const std::string& name : symbols->defined) {
    if (name.rfind("aoti_", 0) == 0) shims.push_back(name);
    else if (name.rfind("cuda", 0) != 0) others.push_back(name);
  }
  std::vector<std::string> table;
  for (const AotiShim& row : builtin_runtime_shims()) table.emplace_back(row.name);
  CHECK(shims == table);
  CHECK(others == std::vector<std::string>{"ptbundle_runtime_module"});
  for (const char* cuda : {"cudaMalloc", "cudaFree", "cudaMemcpy", "cudaSetDevice", "cudaGetDevice",
                           "cudaGetLastError", "cudaGetErrorString", "cudaEventCreate", "cudaEventDestroy",
                           "cudaEventQuery", "cudaEventRecord", "cudaEventSynchronize", "cudaStreamSynchronize"}) {
    CHECK_MESSAGE(std::binary_search(symbols->defined.begin(), symbols->defined.end(), cuda), cuda);
  }
  // The renamed static cudaMemcpy stays inside; no LibTorch, no libcudart.so.
  CHECK_FALSE(std::binary_search(symbols->defined.begin(), symbols->defined.end(), "ptb_cudart_cudaMemcpy"));
  // What a robot process gets with it: the C and C++ runtime libraries,
  // nothing of ptbundle's own dependencies (no libzip, no OpenSSL), no
  // LibTorch, no libcudart.so, no cuBLAS or cuDNN (opened at first use).
  for (const std::string& needed : symbols->needed) {
    const bool system = needed.rfind("libc.so", 0) == 0 || needed.rfind("libm.so", 0) == 0 ||
                        needed.rfind("libstdc++.so", 0) == 0 || needed.rfind("libgcc_s.so", 0) == 0 ||
                        needed.rfind("libdl.so", 0) == 0 || needed.rfind("librt.so", 0) == 0 ||
                        needed.rfind("libpthread.so", 0) == 0 || needed.rfind("ld-linux", 0) == 0 ||
                        needed.rfind("libasan.so", 0) == 0 || needed.rfind("libubsan.so", 0) == 0;
    CHECK_MESSAGE(system, (std::string("the built-in runtime module NEEDs ") + needed));
  }
#endif
}

#if defined(PTB_TEST_SHIM_CORE)
#include "engines/route_check.h"

namespace {

// A host float64 tensor of `values` at `strides`.
Tensor host_doubles(const std::vector<double>& values, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  Tensor t;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  t.dtype = ScalarType::Double;
  auto storage = allocate(values.size() * 8, kDeviceCpu, 0);
  REQUIRE(storage.ok());
  t.storage = *storage;
  std::memcpy(t.storage->data, values.data(), values.size() * 8);
  return t;
}

}  // namespace

#endif  // PTB_TEST_SHIM_CORE

TEST_CASE("built-in shims: two ways' results are compared element by element, in their own layouts") {
#if !defined(PTB_TEST_SHIM_CORE)
  PTB_SKIP_WITHOUT_SHIM_CORE();
#else
  // [[1, 2], [3, -4]] row-major against the same values column-major.
  const Tensor reference = host_doubles({1, 2, 3, -4}, {2, 2}, {2, 1});
  const Tensor same = host_doubles({1, 3, 2, -4}, {2, 2}, {1, 2});
  auto agreement = compare(same, reference);
  REQUIRE(agreement);
  CHECK(agreement->difference == 0);
  CHECK(agreement->largest == 4);
  CHECK(agreement->within(0));

  const Tensor off = host_doubles({1, 2, 3, -4.0004}, {2, 2}, {2, 1});
  agreement = compare(off, reference);
  REQUIRE(agreement);
  CHECK(agreement->difference == doctest::Approx(4e-4));
  CHECK(agreement->within(1.01e-4));  // relative to the largest |reference|, 4
  CHECK_FALSE(agreement->within(0.99e-4));

  // A NaN is a disagreement at any tolerance; other sizes are no comparison.
  const Tensor nan = host_doubles({1, 2, 3, std::nan("")}, {2, 2}, {2, 1});
  agreement = compare(nan, reference);
  REQUIRE(agreement);
  CHECK_FALSE(agreement->within(1e30));
  CHECK_FALSE(compare(host_doubles({1, 2}, {2}, {1}), reference));
#endif
}
