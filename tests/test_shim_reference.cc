// Each compute shim family of the built-in runtime against outputs eager
// PyTorch recorded on a GPU (tests/data/shims, written by
// tests/gpu/record_shim_references.py): the module is opened with dlopen and
// each shim called through the C ABI an AOTInductor library calls, on the
// recorded inputs, with no PyTorch in the process. Tolerances: float32 1e-4
// of the largest reference value, 16-bit floats 2e-2, integers exactly. The
// samplers are checked by their range and moments. These are the GPU tier's
// ("GPU shim reference: ..."); without a GPU, the module or the recorded
// files, each says SKIPPED with what is missing.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ptbundle/base/dtype.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/results/tolerance.h"
#include "support.h"

using namespace ptb;
using namespace ptb::test;

namespace {

using Handle = void*;
using Error = int32_t;
template <class... A>
using Fn = Error (*)(A...);
using json = nlohmann::json;

constexpr int32_t kCuda = 1;  // aoti_torch_device_type_cuda
constexpr int kHostToDevice = 1, kDefault = 4;

[[maybe_unused]] fs::path references() { return fs::path(PTB_SOURCE_DIR) / "tests" / "data" / "shims"; }

// Why the shim reference checks cannot run here, or "".
std::string shim_reference_missing() {
#if !defined(PTB_TEST_BUILTIN_MODULE)
  return std::string("this build has no built-in runtime (") + PTB_BUILTIN_RUNTIME_STATUS + ")";
#else
  const GpuReport report = discover_gpus();
  if (report.gpus.empty()) return "no CUDA GPU: " + report.reason;
  if (!fs::exists(references() / "manifest.json")) {
    return "no reference outputs in tests/data/shims (record them on a GPU machine with PyTorch: "
           "python3 tests/gpu/record_shim_references.py --out tests/data/shims)";
  }
  return "";
#endif
}

#if defined(PTB_TEST_BUILTIN_MODULE)

// The built-in runtime module, opened once for the process and never closed
// (its CUDA runtime keeps the context).
void* module() {
  static void* handle = ::dlopen(PTB_TEST_BUILTIN_MODULE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(handle != nullptr, ::dlerror());
  return handle;
}

template <class F>
F get(const char* name) {
  void* symbol = ::dlsym(module(), name);
  REQUIRE_MESSAGE(symbol != nullptr, "the built-in runtime module has no " << name);
  return reinterpret_cast<F>(symbol);
}

struct Api {
  Fn<int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, Handle*> empty_strided =
      get<decltype(empty_strided)>("aoti_torch_empty_strided");
  Fn<Handle> remove = get<decltype(remove)>("aoti_torch_delete_tensor_object");
  Fn<Handle, void**> data_ptr = get<decltype(data_ptr)>("aoti_torch_get_data_ptr");
  Fn<Handle, int64_t*> dim = get<decltype(dim)>("aoti_torch_get_dim");
  Fn<Handle, int64_t**> sizes = get<decltype(sizes)>("aoti_torch_get_sizes");
  Fn<Handle, int64_t**> strides = get<decltype(strides)>("aoti_torch_get_strides");
  Fn<Handle, int32_t*> dtype = get<decltype(dtype)>("aoti_torch_get_dtype");
  Fn<Handle, int64_t, const int64_t*, const int64_t*, int64_t, Handle*> reinterpret =
      get<decltype(reinterpret)>("aoti_torch__reinterpret_tensor");
  int (*memcpy)(void*, const void*, size_t, int) = get<decltype(memcpy)>("cudaMemcpy");
  int (*synchronize)() = get<decltype(synchronize)>("cudaDeviceSynchronize");
};

Api& api() {
  static Api instance;
  return instance;
}

// A contiguous tensor on the host: an .npy file's array, or a shim's output
// copied back in C order.
struct Host {
  int8_t scalar_type = 0;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
  TensorBytes view() const { return {scalar_type, shape, Bytes(bytes.data(), bytes.size())}; }
  uint64_t count() const { return bytes.size() / scalar_type_size(scalar_type).value_or(1); }
};

Host read_npy(const std::string& file) {
  auto npy = NpyFile::open((references() / file).string());
  REQUIRE_MESSAGE(npy.ok(), npy.error().message);
  return {npy->header().scalar_type, npy->header().shape,
          std::vector<uint8_t>(npy->data().begin(), npy->data().end())};
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return strides;
}

// The tensors of one case, deleted at its end.
struct Tensors {
  std::vector<Handle> owned;
  ~Tensors() {
    for (Handle tensor : owned)
      if (tensor) api().remove(tensor);
  }
  Handle empty(int32_t dtype, const std::vector<int64_t>& sizes) {
    Handle tensor = nullptr;
    const std::vector<int64_t> strides = contiguous_strides(sizes);
    REQUIRE(api().empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype, kCuda, 0,
                                &tensor) == 0);
    owned.push_back(tensor);
    return tensor;
  }
  Handle upload(const Host& host) {
    std::vector<int64_t> sizes(host.shape.begin(), host.shape.end());
    Handle tensor = empty(host.scalar_type, sizes);
    void* data = nullptr;
    REQUIRE(api().data_ptr(tensor, &data) == 0);
    if (!host.bytes.empty()) REQUIRE(api().memcpy(data, host.bytes.data(), host.bytes.size(), kHostToDevice) == 0);
    return tensor;
  }
  // A view of `tensor` with other sizes and strides (as Inductor's wrappers
  // pass views).
  Handle view(Handle tensor, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    Handle out = nullptr;
    REQUIRE(api().reinterpret(tensor, static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), 0, &out) == 0);
    owned.push_back(out);
    return out;
  }
  Handle made(Handle tensor) {
    owned.push_back(tensor);
    return tensor;
  }
};

// A shim's output gathered into C order on the host.
Host download(Handle tensor) {
  int64_t dims = 0;
  int64_t *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0;
  void* data = nullptr;
  REQUIRE(tensor != nullptr);
  REQUIRE(api().dim(tensor, &dims) == 0);
  REQUIRE(api().sizes(tensor, &sizes) == 0);
  REQUIRE(api().strides(tensor, &strides) == 0);
  REQUIRE(api().dtype(tensor, &dtype) == 0);
  REQUIRE(api().data_ptr(tensor, &data) == 0);
  const uint64_t element = scalar_type_size(static_cast<int8_t>(dtype)).value_or(1);
  Host host;
  host.scalar_type = static_cast<int8_t>(dtype);
  uint64_t count = 1, span = 1;
  for (int64_t d = 0; d < dims; ++d) {
    host.shape.push_back(static_cast<uint64_t>(sizes[d]));
    count *= static_cast<uint64_t>(sizes[d]);
    if (sizes[d] > 0) span += static_cast<uint64_t>(sizes[d] - 1) * static_cast<uint64_t>(strides[d]);
  }
  if (count == 0) return host;
  std::vector<uint8_t> spanned(span * element);
  REQUIRE(api().memcpy(spanned.data(), data, spanned.size(), kDefault) == 0);
  host.bytes.resize(count * element);
  std::vector<int64_t> at(static_cast<size_t>(dims), 0);
  for (uint64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < dims; ++d) offset += at[d] * strides[d];
    std::memcpy(host.bytes.data() + i * element, spanned.data() + offset * element, element);
    for (int64_t d = dims; d-- > 0;) {
      if (++at[d] < sizes[d]) break;
      at[d] = 0;
    }
  }
  return host;
}

// The value one of the item shims returned, as a 0-d host tensor.
template <class T>
Host item(const char* shim, Handle input, int8_t scalar_type) {
  T value{};
  REQUIRE(get<Fn<Handle, T*>>(shim)(input, &value) == 0);
  Host host;
  host.scalar_type = scalar_type;
  host.bytes.resize(sizeof value);
  std::memcpy(host.bytes.data(), &value, sizeof value);
  return host;
}

std::vector<int64_t> sizes_of(const Host& host) { return {host.shape.begin(), host.shape.end()}; }

// Calls `shim` as the case says; returns its outputs, downloaded.
std::vector<Host> call(const json& c, const std::vector<Host>& inputs, const std::vector<Host>& references) {
  const std::string shim = c.at("shim");
  const json& p = c.at("params");
  Tensors t;
  std::vector<Handle> in;
  for (const Host& input : inputs) in.push_back(t.upload(input));
  // An _out shim's out argument, shaped as the reference.
  auto out_like = [&](size_t j) {
    REQUIRE(j < references.size());
    return t.empty(references[j].scalar_type, sizes_of(references[j]));
  };
  std::vector<Handle> outs;
  if (shim == "mm_out" || shim == "bmm_out") {
    Handle out = out_like(0);
    REQUIRE(get<Fn<Handle, Handle, Handle>>(("aoti_torch_cuda_" + shim).c_str())(out, in[0], in[1]) == 0);
    outs = {out};
  } else if (shim == "addmm_out") {
    Handle mat2 = in[2];
    if (p.value("mat2", "") == "transposed") {
      const int64_t n = static_cast<int64_t>(inputs[2].shape[0]), k = static_cast<int64_t>(inputs[2].shape[1]);
      mat2 = t.view(in[2], {k, n}, {1, k});
    }
    Handle out = out_like(0);
    REQUIRE(get<Fn<Handle, Handle, Handle, Handle, double, double>>("aoti_torch_cuda_addmm_out")(out, in[0], in[1],
                                                                                                 mat2, 1.0, 1.0) == 0);
    outs = {out};
  } else if (shim == "_addmm_activation") {
    Handle out = nullptr;
    REQUIRE(get<Fn<Handle, Handle, Handle, double, double, int32_t, Handle*>>("aoti_torch_cuda__addmm_activation")(
                in[0], in[1], in[2], 1.0, 1.0, p.at("use_gelu").get<bool>() ? 1 : 0, &out) == 0);
    outs = {t.made(out)};
  } else if (shim == "convolution") {
    const int64_t dims = static_cast<int64_t>(inputs[0].shape.size()) - 2;
    const int64_t stride = p.at("stride"), padding = p.at("padding"), groups = p.at("groups");
    std::vector<int64_t> strides(dims, stride), paddings(dims, padding), dilations(dims, 1), output_padding(dims, 0);
    Handle x = in[0], w = in[1];
    if (p.value("channels_last", false)) {
      auto nhwc = [&](Handle tensor, const Host& host) {
        const auto s = sizes_of(host);
        return t.view(tensor, s, {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]});
      };
      x = nhwc(in[0], inputs[0]);
      w = nhwc(in[1], inputs[1]);
    }
    Handle out = nullptr;
    REQUIRE(get<Fn<Handle, Handle, Handle*, const int64_t*, int64_t, const int64_t*, int64_t, const int64_t*, int64_t,
                   int32_t, const int64_t*, int64_t, int64_t, Handle*>>("aoti_torch_cuda_convolution")(
                x, w, nullptr, strides.data(), dims, paddings.data(), dims, dilations.data(), dims,
                p.at("transposed").get<bool>() ? 1 : 0, output_padding.data(), dims, groups, &out) == 0);
    outs = {t.made(out)};
  } else if (shim == "_scaled_dot_product_efficient_attention") {
    Handle out[4] = {};
    Handle* bias = in.size() > 3 ? &in[3] : nullptr;
    const Error error = get<Fn<Handle, Handle, Handle, Handle*, int32_t, double, int32_t, double*, Handle*, Handle*,
                               Handle*, Handle*>>("aoti_torch_cuda__scaled_dot_product_efficient_attention")(
        in[0], in[1], in[2], bias, 1, 0.0, p.at("causal").get<bool>() ? 1 : 0, nullptr, &out[0], &out[1], &out[2],
        &out[3]);
    for (Handle h : out) t.made(h);
    REQUIRE(error == 0);
    outs = {out[0]};
  } else if (shim == "_scaled_dot_product_flash_attention" || shim == "_scaled_dot_product_cudnn_attention") {
    Handle out[7] = {};
    int64_t max_q = 0, max_k = 0;
    Error error = 0;
    if (shim == "_scaled_dot_product_flash_attention") {
      error = get<Fn<Handle, Handle, Handle, double, int32_t, int32_t, double*, Handle*, Handle*, Handle*, Handle*,
                     int64_t*, int64_t*, Handle*, Handle*, Handle*>>("aoti_torch_cuda__scaled_dot_product_flash_attention")(
          in[0], in[1], in[2], 0.0, p.at("causal").get<bool>() ? 1 : 0, 0, nullptr, &out[0], &out[1], &out[2], &out[3],
          &max_q, &max_k, &out[4], &out[5], &out[6]);
    } else {
      error = get<Fn<Handle, Handle, Handle, Handle*, int32_t, double, int32_t, int32_t, double*, Handle*, Handle*,
                     Handle*, Handle*, int64_t*, int64_t*, Handle*, Handle*, Handle*>>(
          "aoti_torch_cuda__scaled_dot_product_cudnn_attention")(in[0], in[1], in[2], nullptr, 0, 0.0, 0, 0, nullptr,
                                                                  &out[0], &out[1], &out[2], &out[3], &max_q, &max_k,
                                                                  &out[4], &out[5], &out[6]);
    }
    for (Handle h : out) t.made(h);
    REQUIRE(error == 0);
    outs = {out[0]};
  } else if (shim == "sort_stable") {
    Handle values = nullptr, indices = nullptr;
    int32_t stable = 1;
    const Error error = get<Fn<Handle, int32_t*, int64_t, int32_t, Handle*, Handle*>>("aoti_torch_cuda_sort_stable")(
        in[0], &stable, p.at("dim").get<int64_t>(), p.at("descending").get<bool>() ? 1 : 0, &values, &indices);
    t.made(values);
    t.made(indices);
    REQUIRE(error == 0);
    outs = {values, indices};
  } else if (shim == "topk") {
    Handle values = nullptr, indices = nullptr;
    const Error error = get<Fn<Handle, int64_t, int64_t, int32_t, int32_t, Handle*, Handle*>>("aoti_torch_cuda_topk")(
        in[0], p.at("k").get<int64_t>(), p.at("dim").get<int64_t>(), 1, 1, &values, &indices);
    t.made(values);
    t.made(indices);
    REQUIRE(error == 0);
    outs = {values, indices};
  } else if (shim == "nonzero") {
    Handle out = nullptr;
    REQUIRE(get<Fn<Handle, Handle*>>("aoti_torch_cuda_nonzero")(in[0], &out) == 0);
    outs = {t.made(out)};
  } else if (shim == "index_Tensor") {
    const Handle* indices[1] = {&in[1]};
    Handle out = nullptr;
    REQUIRE(get<Fn<Handle, const Handle**, int64_t, Handle*>>("aoti_torch_cuda_index_Tensor")(in[0], indices, 1, &out) ==
            0);
    outs = {t.made(out)};
  } else if (shim == "index_put_out") {
    const Handle indices[1] = {in[1]};
    Handle out = out_like(0);
    REQUIRE(get<Fn<Handle, Handle, const Handle*, uint32_t, Handle, bool>>("aoti_torch_index_put_out")(
                out, in[0], indices, 1, in[2], p.at("accumulate").get<bool>()) == 0);
    outs = {out};
  } else if (shim == "scatter_src_out") {
    Handle out = out_like(0);
    REQUIRE(get<Fn<Handle, Handle, int64_t, Handle, Handle>>("aoti_torch_cuda_scatter_src_out")(
                out, in[0], p.at("dim").get<int64_t>(), in[1], in[2]) == 0);
    outs = {out};
  } else if (shim == "scatter_reduce_two_out") {
    Handle out = out_like(0);
    const std::string reduce = p.at("reduce");
    REQUIRE(get<Fn<Handle, Handle, int64_t, Handle, Handle, const char*, int32_t>>(
                "aoti_torch_cuda_scatter_reduce_two_out")(out, in[0], p.at("dim").get<int64_t>(), in[1], in[2],
                                                          reduce.c_str(), p.at("include_self").get<bool>() ? 1 : 0) == 0);
    outs = {out};
  } else if (shim == "_weight_int4pack_mm") {
    Handle out = nullptr;
    REQUIRE(get<Fn<Handle, Handle, int64_t, Handle, Handle*>>("aoti_torch_cuda__weight_int4pack_mm")(
                in[0], in[1], p.at("group").get<int64_t>(), in[2], &out) == 0);
    outs = {t.made(out)};
  } else if (shim.ends_with("_plain_mm")) {
    const std::string name = "aoti_torch_cuda_" + shim;
    const int64_t group = p.at("group");
    Handle out = nullptr;
    Error error = -1;
    if (in.size() == 4) {
      error = get<Fn<Handle, Handle, Handle, Handle, int64_t, Handle*>>(name.c_str())(in[0], in[1], in[2], in[3], group,
                                                                                     &out);
    } else if (in.size() == 5) {
      error = get<Fn<Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name.c_str())(in[0], in[1], in[2], in[3],
                                                                                             in[4], group, &out);
    } else if (in.size() == 6) {
      error = get<Fn<Handle, Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name.c_str())(
          in[0], in[1], in[2], in[3], in[4], in[5], group, &out);
    } else if (in.size() == 7) {
      error = get<Fn<Handle, Handle, Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name.c_str())(
          in[0], in[1], in[2], in[3], in[4], in[5], in[6], group, &out);
    }
    t.made(out);
    REQUIRE_MESSAGE(error == 0, shim << " with " << in.size() << " tensors");
    outs = {out};
  } else if (shim == "item_float32") {
    return {item<float>("aoti_torch_item_float32", in[0], ScalarType::Float)};
  } else if (shim == "item_int64") {
    return {item<int64_t>("aoti_torch_item_int64", in[0], ScalarType::Long)};
  } else if (shim == "item_bfloat16") {
    return {item<uint16_t>("aoti_torch_item_bfloat16", in[0], ScalarType::BFloat16)};
  } else if (shim == "rand" || shim == "randn") {
    const std::vector<int64_t> size = p.at("size");
    int32_t dtype = ScalarType::Float, device = kCuda;
    Handle out = nullptr;
    REQUIRE(get<Fn<const int64_t*, int64_t, int32_t*, int32_t*, int32_t*, int32_t, int32_t*, Handle*>>(
                ("aoti_torch_cuda_" + shim).c_str())(size.data(), static_cast<int64_t>(size.size()), &dtype, nullptr,
                                                     &device, 0, nullptr, &out) == 0);
    outs = {t.made(out)};
  } else if (shim == "randint_low_out") {
    const std::vector<int64_t> size = p.at("size");
    Handle out = t.empty(ScalarType::Long, size);
    REQUIRE(get<Fn<Handle, int64_t, int64_t, const int64_t*, int64_t>>("aoti_torch_cuda_randint_low_out")(
                out, p.at("low").get<int64_t>(), p.at("high").get<int64_t>(), size.data(),
                static_cast<int64_t>(size.size())) == 0);
    outs = {out};
  } else {
    FAIL("tests/data/shims/manifest.json names shim " << shim << ", which this test cannot call");
  }
  REQUIRE(api().synchronize() == 0);
  std::vector<Host> got;
  for (Handle out : outs) got.push_back(download(out));
  return got;
}

bool is_float(int8_t scalar_type) {
  return scalar_type == ScalarType::Float || scalar_type == ScalarType::Double || scalar_type == ScalarType::Half ||
         scalar_type == ScalarType::BFloat16;
}

// The largest difference relative to the largest reference value, or -1
// (after a failed CHECK) when they cannot be compared.
double compare(const Host& got, const Host& want, const std::string& what) {
  CHECK_MESSAGE(got.scalar_type == want.scalar_type,
                what << ": dtype " << int(got.scalar_type) << ", expected " << int(want.scalar_type));
  CHECK_MESSAGE(got.shape == want.shape, what << ": shape " << shape_text(got.shape) << ", expected "
                                              << shape_text(want.shape));
  if (got.scalar_type != want.scalar_type || got.shape != want.shape || got.bytes.size() != want.bytes.size()) return -1;
  const TensorBytes g = got.view(), w = want.view();
  if (!is_float(want.scalar_type)) {
    uint64_t differ = 0;
    for (uint64_t i = 0; i < want.count(); ++i) differ += element_value(g, i) != element_value(w, i);
    CHECK_MESSAGE(differ == 0, what << ": " << differ << " of " << want.count() << " elements differ");
    return differ == 0 ? 0 : -1;
  }
  double worst = 0, largest = 1e-30;
  for (uint64_t i = 0; i < want.count(); ++i) {
    const double a = element_value(g, i), b = element_value(w, i);
    const double diff = std::fabs(a - b);
    worst = std::isnan(diff) || std::isnan(worst) ? NAN : std::max(worst, diff);
    largest = std::max(largest, std::fabs(b));
  }
  const double limit = want.scalar_type == ScalarType::Float || want.scalar_type == ScalarType::Double ? 1e-4 : 2e-2;
  const double relative = worst / largest;
  CHECK_MESSAGE(relative <= limit, what << ": largest difference " << relative << " of the largest value, above "
                                        << limit);
  return relative;
}

// rand, randn and randint have no reference values: their range and moments.
void check_sampler(const std::string& shim, const Host& got, const std::string& what) {
  const TensorBytes g = got.view();
  const uint64_t n = got.count();
  REQUIRE(n > 1);
  double sum = 0, squares = 0, low = INFINITY, high = -INFINITY;
  for (uint64_t i = 0; i < n; ++i) {
    const double v = element_value(g, i);
    REQUIRE_MESSAGE(std::isfinite(v), what << ": element " << i << " is not finite");
    sum += v, squares += v * v, low = std::min(low, v), high = std::max(high, v);
  }
  const double mean = sum / n, deviation = std::sqrt(std::max(0.0, squares / n - mean * mean));
  CAPTURE(what);
  if (shim == "randint_low_out") {
    CHECK(low >= 0);
    CHECK(high < 100);
    CHECK(std::fabs(mean - 49.5) < 2);
  } else if (shim == "rand") {
    CHECK(low >= 0);
    CHECK(high < 1);
    CHECK(std::fabs(mean - 0.5) < 0.02);
  } else {
    CHECK(std::fabs(mean) < 0.05);
    CHECK(std::fabs(deviation - 1) < 0.05);
  }
  std::printf("[gpu] shim reference %s: mean %.4g, deviation %.4g\n", what.c_str(), mean, deviation);
}

void check_family(const std::string& family) {
  const std::string missing = shim_reference_missing();
  if (!missing.empty()) {
    skip(missing);
    return;
  }
  const json manifest = json::parse(read_text(references() / "manifest.json"));
  const json& recorded = manifest.at("recorded");
  int cases = 0;
  for (const json& c : manifest.at("cases")) {
    if (c.at("family") != family) continue;
    ++cases;
    const std::string name = c.at("case");
    CAPTURE(name);
    std::vector<Host> inputs, wanted;
    for (const json& file : c.at("inputs")) inputs.push_back(read_npy(file));
    for (const json& file : c.at("outputs")) wanted.push_back(read_npy(file));
    const std::vector<Host> got = call(c, inputs, wanted);
    if (family == "random") {
      REQUIRE(got.size() == 1);
      check_sampler(c.at("shim"), got[0], name);
      continue;
    }
    REQUIRE_MESSAGE(got.size() >= wanted.size(), name << ": " << got.size() << " outputs, expected " << wanted.size());
    double worst = 0;
    for (size_t j = 0; j < wanted.size(); ++j)
      worst = std::max(worst, compare(got[j], wanted[j], name + " output " + std::to_string(j)));
    std::printf("[gpu] shim reference %s: largest relative difference %.2e (PyTorch %s on %s)\n", name.c_str(), worst,
                recorded.value("torch", "?").c_str(), recorded.value("gpu", "?").c_str());
  }
  CHECK_MESSAGE(cases > 0, "tests/data/shims/manifest.json has no case of family " << family);
}

#else

void check_family(const std::string&) { skip(shim_reference_missing()); }

#endif

}  // namespace

TEST_CASE("GPU shim reference: GEMM shims (mm, addmm, bmm, addmm with GELU) match PyTorch's outputs") {
  check_family("gemm");
}

TEST_CASE("GPU shim reference: convolution shims match PyTorch's outputs") { check_family("convolution"); }

TEST_CASE("GPU shim reference: attention shims (efficient, flash, cuDNN) match PyTorch's outputs") {
  check_family("attention");
}

TEST_CASE("GPU shim reference: sort and topk match PyTorch's outputs") { check_family("sort"); }

TEST_CASE("GPU shim reference: index, index_put, nonzero and scatter match PyTorch's outputs") {
  check_family("index");
}

TEST_CASE("GPU shim reference: quantized products (int4pack, plain int4/5/6/8) match PyTorch's outputs") {
  check_family("quantized");
}

TEST_CASE("GPU shim reference: .item() returns PyTorch's values") { check_family("scalar"); }

TEST_CASE("GPU shim reference: rand, randn and randint draw in range with the expected moments") {
  check_family("random");
}
