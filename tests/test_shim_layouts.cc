// The GEMM, convolution and attention shims on drawn layouts, against the
// plain float64 kernels of gpu/reference_kernels.cu, on the GPU. Each case
// draws shapes (1 and odd sizes included), dtypes and the views Inductor's
// wrappers can pass: row- and column-major, batch dimensions in any order,
// padded leading dimensions, storage offsets, every other element, zero
// strides where ATen allows a broadcast, odd strides on dimensions of size
// 1, outputs that are views of larger buffers. Every output element must be
// within the dtype's rounding of the reference, and every byte of an
// output's storage outside its view must be as it was. A failure prints the
// case (shim, dtype, sizes, strides, offsets, scalars) so it can be kept as a
// named case. The cases are drawn from a fixed seed; PTB_SHIM_CASES_SEED
// draws others, PTB_SHIM_CASES_COUNT sets how many.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>

#include "gpu_support.h"
#include "ptbundle/base/dtype.h"
#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "gpu/reference_kernels.h"
#include "shims/shims.h"
#include "engines/tensor.h"

using namespace ptb;
namespace ref = ptb::test::reference;

namespace {

// Why these tests cannot run here, or "".
std::string layouts_missing() { return test::cli_builtin_gpu_missing(); }

// The drawn dtypes' sizes, from the one table (base/dtype.h).
size_t element_size(int32_t dtype) { return static_cast<size_t>(scalar_type_size(dtype).value_or(0)); }

std::string dtype_name(int32_t dtype) { return scalar_type_name(dtype); }

// A value of `dtype` from its bytes.
double decode(int32_t dtype, const uint8_t* p) {
  switch (dtype) {
    case ScalarType::Double: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case ScalarType::Half: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      return half_to_float(bits);
    }
    case ScalarType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      return bfloat16_to_float(bits);
    }
    default: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
  }
}

void encode(int32_t dtype, double value, uint8_t* p) {
  switch (dtype) {
    case ScalarType::Double: std::memcpy(p, &value, 8); break;
    case ScalarType::Half: {
      const uint16_t bits = float_to_half(static_cast<float>(value));
      std::memcpy(p, &bits, 2);
      break;
    }
    case ScalarType::BFloat16: {
      const uint16_t bits = float_to_bfloat16(static_cast<float>(value));
      std::memcpy(p, &bits, 2);
      break;
    }
    default: {
      const float f = static_cast<float>(value);
      std::memcpy(p, &f, 4);
    }
  }
}

// The relative rounding a result of `dtype` may carry: a few units in the
// last place of the output, plus float32 accumulation over the reduction.
double tolerance(int32_t dtype, int64_t reduction) {
  switch (dtype) {
    case ScalarType::Double: return 1e-12;
    case ScalarType::Half: return 4.0 / 1024;
    case ScalarType::BFloat16: return 4.0 / 128;
    default: return (8.0 + static_cast<double>(reduction)) * 6e-8;
  }
}

std::string ints(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

// One tensor of a case: a GPU storage of random values (or a fill pattern)
// and the view of it the shim is given.
struct Drawn {
  int32_t dtype = ScalarType::Float;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int64_t storage_elements = 0;
  AtenTensorHandle storage = nullptr, view = nullptr;
  std::vector<uint8_t> uploaded;  // the storage's bytes as the case began

  Drawn() = default;
  Drawn(const Drawn&) = delete;
  Drawn& operator=(const Drawn&) = delete;
  ~Drawn() {
    if (view) aoti_torch_delete_tensor_object(view);
    if (storage) aoti_torch_delete_tensor_object(storage);
  }
  const uint8_t* base() const {
    void* data = nullptr;
    aoti_torch_get_data_ptr(storage, &data);
    return static_cast<const uint8_t*>(data);
  }
  std::string text() const {
    return dtype_name(dtype) + ints(sizes) + " strides " + ints(strides) + (offset ? " offset " + std::to_string(offset) : "");
  }
  ref::View reference() const {
    ref::View v;
    v.data = base() + offset * static_cast<int64_t>(element_size(dtype));
    v.dtype = dtype;
    v.dims = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) {
      v.sizes[d] = sizes[d];
      v.strides[d] = strides[d];
    }
    return v;
  }
  // The view's element offsets in its storage, in row-major index order.
  std::vector<int64_t> offsets() const {
    std::vector<int64_t> result;
    int64_t count = 1;
    for (int64_t s : sizes) count *= s;
    result.reserve(static_cast<size_t>(count));
    std::vector<int64_t> index(sizes.size(), 0);
    for (int64_t n = 0; n < count; ++n) {
      int64_t at = offset;
      for (size_t d = 0; d < sizes.size(); ++d) at += index[d] * strides[d];
      result.push_back(at);
      for (size_t d = sizes.size(); d-- > 0;) {
        if (++index[d] < sizes[d]) break;
        index[d] = 0;
      }
    }
    return result;
  }
};

// Values a product of float16 or bfloat16 operands holds exactly (k/8,
// |k| <= 8), so that only the output's rounding is measured; any float for
// float32 and float64, so that a product computed in less than float32
// (TF32) shows.
double draw_value(std::mt19937_64& rng, int32_t dtype) {
  if (dtype == ScalarType::Half || dtype == ScalarType::BFloat16) {
    return static_cast<double>(static_cast<int>(rng() % 17) - 8) / 8.0;
  }
  return std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
}

// Makes `t` (sizes, strides, offset set) on the GPU: a storage that the view
// fits in, with a few elements of slack, filled with drawn values.
void upload(Drawn& t, std::mt19937_64& rng) {
  auto needed = builtin::storage_elements_needed(t.sizes, t.strides, t.offset);
  REQUIRE(needed);
  t.storage_elements = static_cast<int64_t>(*needed) + static_cast<int64_t>(rng() % 4) + 1;
  const int64_t one[] = {t.storage_elements};
  const int64_t unit[] = {1};
  REQUIRE(aoti_torch_empty_strided(1, one, unit, t.dtype, aoti_torch_device_type_cuda(), 0, &t.storage) == kShimSuccess);
  const size_t item = element_size(t.dtype);
  t.uploaded.assign(static_cast<size_t>(t.storage_elements) * item, 0);
  for (int64_t i = 0; i < t.storage_elements; ++i) encode(t.dtype, draw_value(rng, t.dtype), &t.uploaded[static_cast<size_t>(i) * item]);
  void* data = nullptr;
  REQUIRE(aoti_torch_get_data_ptr(t.storage, &data) == kShimSuccess);
  REQUIRE(ref::to_device(data, t.uploaded.data(), t.uploaded.size()).empty());
  // Half the time through a view that starts part of the way in, as a
  // wrapper slices a view of a buffer: the offset given is then relative to
  // that view's own.
  const int64_t first = t.offset > 0 && rng() % 2 ? static_cast<int64_t>(rng() % static_cast<uint64_t>(t.offset)) + 1 : 0;
  AtenTensorHandle from = t.storage;
  AtenTensorHandle middle = nullptr;
  if (first > 0) {
    const int64_t rest[] = {t.storage_elements - first};
    REQUIRE(aoti_torch__reinterpret_tensor(t.storage, 1, rest, unit, first, &middle) == kShimSuccess);
    from = middle;
  }
  REQUIRE(aoti_torch__reinterpret_tensor(from, static_cast<int64_t>(t.sizes.size()), t.sizes.data(),
                                         t.strides.data(), t.offset - first, &t.view) == kShimSuccess);
  if (middle) aoti_torch_delete_tensor_object(middle);
}

// Strides for `sizes` as Inductor may lay them out: the dimensions dense in
// a drawn order (row-major, column-major, a batch dimension inside),
// possibly with a padded leading dimension and every other element taken,
// size-1 dimensions given odd strides, and (where `broadcast` allows) a
// dimension of stride 0.
std::vector<int64_t> draw_strides(std::mt19937_64& rng, const std::vector<int64_t>& sizes, bool broadcast) {
  const size_t dims = sizes.size();
  std::vector<size_t> order(dims);  // innermost first
  for (size_t i = 0; i < dims; ++i) order[i] = dims - 1 - i;
  const unsigned pick = rng() % 8;
  if (pick < 3 && dims >= 2) std::swap(order[0], order[1]);  // the last two transposed
  else if (pick == 3) std::shuffle(order.begin(), order.end(), rng);
  const int64_t step = rng() % 6 == 0 ? 2 : 1;  // every other element
  std::vector<int64_t> strides(dims, 0);
  int64_t running = step;
  for (size_t n = 0; n < dims; ++n) {
    const size_t d = order[n];
    strides[d] = running;
    int64_t extent = std::max<int64_t>(sizes[d], 1);
    if (n == 0 && rng() % 4 == 0) extent += static_cast<int64_t>(rng() % 5) + 1;  // padded rows
    running *= extent;
  }
  for (size_t d = 0; d < dims; ++d) {
    if (sizes[d] == 1 && rng() % 3 == 0) strides[d] = rng() % 2 ? 1 : static_cast<int64_t>(rng() % 300) + 1;
  }
  if (broadcast && dims == 3 && rng() % 5 == 0) strides[0] = 0;
  return strides;
}

void draw_tensor(Drawn& t, std::mt19937_64& rng, int32_t dtype, std::vector<int64_t> sizes, bool broadcast) {
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.strides = draw_strides(rng, t.sizes, broadcast);
  t.offset = rng() % 3 == 0 ? static_cast<int64_t>(rng() % 40) + 1 : 0;
  upload(t, rng);
}

int64_t draw_size(std::mt19937_64& rng) {
  static const int64_t sizes[] = {1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 32, 33, 64, 100, 128, 255};
  return sizes[rng() % std::size(sizes)];
}

int32_t draw_dtype(std::mt19937_64& rng, bool doubles) {
  const unsigned pick = rng() % 10;
  if (pick < 5) return ScalarType::Float;
  if (pick < 7) return ScalarType::Half;
  if (pick < 9 || !doubles) return ScalarType::BFloat16;
  return ScalarType::Double;
}

// The storage's bytes back from the GPU.
std::vector<uint8_t> download(const Drawn& t) {
  std::vector<uint8_t> bytes(t.uploaded.size());
  REQUIRE(ref::synchronize().empty());
  REQUIRE(ref::to_host(bytes.data(), t.base(), bytes.size()).empty());
  return bytes;
}

std::vector<double> download_doubles(const double* data, size_t count) {
  std::vector<double> values(count);
  REQUIRE(ref::to_host(values.data(), data, count * 8).empty());
  return values;
}

// Float64 GPU buffers for a reference's outputs.
struct DeviceDoubles {
  double* data = nullptr;
  size_t count = 0;
  explicit DeviceDoubles(size_t n) : count(n) { data = static_cast<double*>(ref::device_alloc(std::max<size_t>(n, 1) * 8)); }
  ~DeviceDoubles() { ref::device_free(data); }
  DeviceDoubles(const DeviceDoubles&) = delete;
  DeviceDoubles& operator=(const DeviceDoubles&) = delete;
};

// Compares `values` (an output's elements at `offsets` of `bytes`, in
// row-major index order) with the reference; "" or the worst element.
std::string compare(int32_t dtype, const std::vector<uint8_t>& bytes, const std::vector<int64_t>& offsets,
                    const std::vector<double>& expected, const std::vector<double>* magnitude, double tol) {
  const size_t item = element_size(dtype);
  double worst = 0;
  size_t worst_at = 0;
  bool bad = false;
  for (size_t i = 0; i < offsets.size(); ++i) {
    const double got = decode(dtype, &bytes[static_cast<size_t>(offsets[i]) * item]);
    const double want = expected[i];
    const double scale = std::max({magnitude ? (*magnitude)[i] : 0.0, std::fabs(want), 1e-30});
    const double error = std::fabs(got - want);
    const double allowed = tol * scale + (dtype == ScalarType::Double ? 1e-300 : 1e-30);
    if (!(error <= allowed) && (!bad || error / scale > worst)) {
      bad = true;
      worst = error / scale;
      worst_at = i;
    }
  }
  if (!bad) return "";
  std::ostringstream out;
  out << "element " << worst_at << ": got " << decode(dtype, &bytes[static_cast<size_t>(offsets[worst_at]) * item])
      << ", expected " << expected[worst_at] << " (relative error " << worst << ", allowed " << tol << ")";
  return out.str();
}

// "" when every byte of `t`'s storage outside its view is as uploaded.
std::string untouched_outside(const Drawn& t, const std::vector<uint8_t>& after) {
  std::vector<bool> inside(static_cast<size_t>(t.storage_elements), false);
  for (int64_t at : t.offsets()) inside[static_cast<size_t>(at)] = true;
  const size_t item = element_size(t.dtype);
  for (size_t e = 0; e < inside.size(); ++e) {
    if (inside[e]) continue;
    if (std::memcmp(&after[e * item], &t.uploaded[e * item], item) != 0) {
      return "element " + std::to_string(e) + " of the output's storage, outside its view, was written";
    }
  }
  return "";
}

// `t` takes over `made`, a tensor a shim returned, to read it back through
// its own sizes, strides and offset.
void adopt(Drawn& t, AtenTensorHandle made) {
  t.storage = made;
  REQUIRE(aoti_torch_get_dtype(made, &t.dtype) == kShimSuccess);
  int64_t dims = 0, *p = nullptr;
  REQUIRE(aoti_torch_get_dim(made, &dims) == kShimSuccess);
  REQUIRE(aoti_torch_get_sizes(made, &p) == kShimSuccess);
  t.sizes.assign(p, p + dims);
  REQUIRE(aoti_torch_get_strides(made, &p) == kShimSuccess);
  t.strides.assign(p, p + dims);
  REQUIRE(aoti_torch_get_storage_offset(made, &t.offset) == kShimSuccess);
  // base() is the view's data pointer here, so the offsets start at 0.
  t.offset = 0;
  auto needed = builtin::storage_elements_needed(t.sizes, t.strides, 0);
  REQUIRE(needed);
  t.storage_elements = static_cast<int64_t>(*needed);
  t.uploaded.assign(static_cast<size_t>(t.storage_elements) * element_size(t.dtype), 0);
}

// A 3-d reference view of a 2-d or 3-d operand (a batch of one).
ref::View as_batch(const Drawn& t) {
  ref::View v = t.reference();
  if (t.sizes.size() == 3) return v;
  v.dims = 3;
  v.sizes[2] = v.sizes[1];
  v.sizes[1] = v.sizes[0];
  v.sizes[0] = 1;
  v.strides[2] = v.strides[1];
  v.strides[1] = v.strides[0];
  v.strides[0] = 0;
  return v;
}

// `self` as ATen broadcasts it to [batch, m, n]: dimensions aligned from the
// right, size-1 and missing ones read with stride 0.
ref::View broadcast_view(const Drawn& self, int64_t batch, int64_t m, int64_t n) {
  ref::View v;
  v.data = self.reference().data;
  v.dtype = self.dtype;
  v.dims = 3;
  const int64_t want[3] = {batch, m, n};
  const size_t lead = 3 - self.sizes.size();
  for (size_t d = 0; d < 3; ++d) {
    v.sizes[d] = want[d];
    if (d < lead) continue;
    const size_t s = d - lead;
    v.strides[d] = self.sizes[s] == 1 ? 0 : self.strides[s];
  }
  return v;
}

struct Outcome {
  std::string failure;  // "" when the case passed
  std::string description;
};

enum class GemmShim { Mm, Addmm, Bmm, Baddbmm, AddmmRelu, AddmmGelu };

const char* shim_name(GemmShim s) {
  switch (s) {
    case GemmShim::Mm: return "mm_out";
    case GemmShim::Addmm: return "addmm_out";
    case GemmShim::Bmm: return "bmm_out";
    case GemmShim::Baddbmm: return "baddbmm_out";
    case GemmShim::AddmmRelu: return "_addmm_activation(relu)";
    case GemmShim::AddmmGelu: return "_addmm_activation(gelu)";
  }
  return "";
}

// The shapes `self` may take for a product of [batch,] m x n.
std::vector<int64_t> draw_self_sizes(std::mt19937_64& rng, bool batched, int64_t batch, int64_t m, int64_t n) {
  switch (rng() % (batched ? 6 : 5)) {
    case 0: return {n};
    case 1: return {1, n};
    case 2: return {m, 1};
    case 3: return {1, 1};
    case 4: return {m, n};
    default: return {batch, m, n};
  }
}

// One drawn GEMM case; `named` overrides the draw (see the LSTM case below).
struct GemmCase {
  GemmShim shim = GemmShim::Mm;
  int32_t dtype = ScalarType::Float;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  double alpha = 1, beta = 0;
};

Outcome run_gemm(const GemmCase& c, Drawn& a, Drawn& b, Drawn* self, Drawn* out_view) {
  Outcome outcome;
  std::ostringstream d;
  d << shim_name(c.shim) << " " << dtype_name(c.dtype) << " m=" << c.m << " n=" << c.n << " k=" << c.k;
  if (c.batch > 1 || c.shim == GemmShim::Bmm || c.shim == GemmShim::Baddbmm) d << " batch=" << c.batch;
  d << "; a " << a.text() << "; b " << b.text();
  if (self) d << "; self " << self->text() << " beta=" << c.beta << " alpha=" << c.alpha;
  if (out_view) d << "; out " << out_view->text();
  outcome.description = d.str();

  AtenTensorHandle made = nullptr;
  AOTITorchError status = kShimFailure;
  switch (c.shim) {
    case GemmShim::Mm: status = aoti_torch_cuda_mm_out(out_view->view, a.view, b.view); break;
    case GemmShim::Bmm: status = aoti_torch_cuda_bmm_out(out_view->view, a.view, b.view); break;
    case GemmShim::Addmm:
      status = aoti_torch_cuda_addmm_out(out_view->view, self->view, a.view, b.view, c.beta, c.alpha);
      break;
    case GemmShim::Baddbmm:
      status = aoti_torch_cuda_baddbmm_out(out_view->view, self->view, a.view, b.view, c.beta, c.alpha);
      break;
    case GemmShim::AddmmRelu:
    case GemmShim::AddmmGelu:
      status = aoti_torch_cuda__addmm_activation(self->view, a.view, b.view, c.beta, c.alpha,
                                                 c.shim == GemmShim::AddmmGelu, &made);
      break;
  }
  if (status != kShimSuccess) {
    outcome.failure = "the shim failed";
    return outcome;
  }
  const size_t count = static_cast<size_t>(c.batch * c.m * c.n);
  DeviceDoubles value(count), magnitude(count);
  const ref::View ra = as_batch(a), rb = as_batch(b);
  ref::View rc;
  if (self) rc = broadcast_view(*self, c.batch, c.m, c.n);
  const ref::Activation act = c.shim == GemmShim::AddmmRelu   ? ref::Activation::Relu
                              : c.shim == GemmShim::AddmmGelu ? ref::Activation::GeluTanh
                                                              : ref::Activation::None;
  REQUIRE(ref::gemm(ra, rb, self ? &rc : nullptr, self ? c.alpha : 1.0, self ? c.beta : 0.0, act, value.data,
                    magnitude.data)
              .empty());
  const auto expected = download_doubles(value.data, count);
  const auto sizes = download_doubles(magnitude.data, count);
  // cuBLASLt's GELU epilogue (which ATen's _addmm_activation also runs)
  // evaluates tanh approximately: a few float32 ulps past the product's.
  const double tol = std::max(tolerance(c.dtype, c.k), act == ref::Activation::GeluTanh ? 1e-5 : 0.0);
  if (made) {
    // _addmm_activation's own output: read it through its sizes and strides.
    Drawn result;
    adopt(result, made);
    if (result.sizes != std::vector<int64_t>{c.m, c.n}) {
      outcome.failure = "the output's sizes are " + ints(result.sizes);
    } else {
      outcome.failure = compare(c.dtype, download(result), result.offsets(), expected, &sizes, tol);
    }
    return outcome;  // result deletes `made`
  }
  const auto after = download(*out_view);
  outcome.failure = compare(c.dtype, after, out_view->offsets(), expected, &sizes, tol);
  if (outcome.failure.empty()) outcome.failure = untouched_outside(*out_view, after);
  return outcome;
}

Outcome drawn_gemm(std::mt19937_64& rng) {
  GemmCase c;
  c.shim = static_cast<GemmShim>(rng() % 6);
  const bool batched = c.shim == GemmShim::Bmm || c.shim == GemmShim::Baddbmm;
  const bool activation = c.shim == GemmShim::AddmmRelu || c.shim == GemmShim::AddmmGelu;
  c.dtype = draw_dtype(rng, !activation);
  c.m = draw_size(rng);
  c.n = draw_size(rng);
  c.k = draw_size(rng);
  c.batch = batched ? static_cast<int64_t>(rng() % 4) + 1 : 1;
  static const double alphas[] = {1, 1, 1, 2, -0.5};
  static const double betas[] = {1, 1, 1, 0, 0.5, -1};
  c.alpha = alphas[rng() % std::size(alphas)];
  c.beta = betas[rng() % std::size(betas)];
  Drawn a, b, self, out;
  auto sized = [&](int64_t r, int64_t cols) {
    return batched ? std::vector<int64_t>{c.batch, r, cols} : std::vector<int64_t>{r, cols};
  };
  draw_tensor(a, rng, c.dtype, sized(c.m, c.k), true);
  draw_tensor(b, rng, c.dtype, sized(c.k, c.n), true);
  const bool has_self = !(c.shim == GemmShim::Mm || c.shim == GemmShim::Bmm);
  if (has_self) draw_tensor(self, rng, c.dtype, draw_self_sizes(rng, batched, c.batch, c.m, c.n), false);
  if (!activation) draw_tensor(out, rng, c.dtype, sized(c.m, c.n), false);
  return run_gemm(c, a, b, has_self ? &self : nullptr, activation ? nullptr : &out);
}

// Channels-last strides for [n, c, spatial...] (NHWC, NDHWC, or NWC).
std::vector<int64_t> channels_last(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  strides[1] = running;
  running *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size(); d-- > 2;) {
    strides[d] = running;
    running *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = running;
  return strides;
}

// A convolution operand: contiguous, channels-last, a slice of a larger
// buffer (padded channels), or every other element.
void draw_conv_operand(Drawn& t, std::mt19937_64& rng, int32_t dtype, std::vector<int64_t> sizes) {
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  const unsigned pick = rng() % 6;
  if (pick == 0 || pick == 1) {
    t.strides = channels_last(t.sizes);
  } else if (pick == 2) {
    std::vector<int64_t> padded = t.sizes;
    padded[1] += 3;  // a slice of a buffer with more channels
    t.strides = builtin::contiguous_strides(padded);
  } else if (pick == 3) {
    t.strides = builtin::contiguous_strides(t.sizes);
    for (int64_t& s : t.strides) s *= 2;
  } else {
    t.strides = builtin::contiguous_strides(t.sizes);
  }
  t.offset = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 40) + 1 : 0;
  upload(t, rng);
}

Outcome drawn_convolution(std::mt19937_64& rng) {
  Outcome outcome;
  ref::ConvGeometry g;
  const unsigned pick = rng() % 20;
  g.spatial = pick < 12 ? 2 : pick < 17 ? 1 : 3;
  const unsigned dtype_pick = rng() % 10;
  const int32_t dtype = dtype_pick < 6 ? ScalarType::Float : dtype_pick < 8 ? ScalarType::Half : ScalarType::BFloat16;
  g.transposed = rng() % 5 == 0;
  const int64_t batch = static_cast<int64_t>(rng() % 3) + 1;
  static const int64_t channels[] = {1, 2, 3, 4, 8, 16};
  int64_t in_per_group = channels[rng() % std::size(channels)];
  int64_t out_per_group = channels[rng() % std::size(channels)];
  const unsigned group_pick = rng() % 5;
  g.groups = group_pick < 3 ? 1 : group_pick == 3 ? 2 : 4;
  if (group_pick == 4) in_per_group = 1;  // depthwise
  const int64_t c_in = in_per_group * g.groups, c_out = out_per_group * g.groups;
  std::vector<int64_t> x_sizes = {batch, c_in}, w_sizes;
  if (g.transposed) w_sizes = {c_in, out_per_group};
  else w_sizes = {c_out, in_per_group};
  std::vector<int64_t> out_sizes = {batch, c_out};
  std::vector<int64_t> output_padding(g.spatial, 0);
  for (int d = 0; d < g.spatial; ++d) {
    const int64_t k = g.spatial == 3 ? static_cast<int64_t>(rng() % 3) + 1 : std::vector<int64_t>{1, 2, 3, 5}[rng() % 4];
    g.stride[d] = static_cast<int64_t>(rng() % 3) + 1;
    g.dilation[d] = rng() % 4 == 0 ? 2 : 1;
    g.padding[d] = static_cast<int64_t>(rng() % 3);
    const int64_t reach = g.dilation[d] * (k - 1) + 1;
    int64_t in = static_cast<int64_t>(rng() % (g.spatial == 3 ? 8 : 20)) + 1;
    int64_t out;
    if (!g.transposed) {
      in = std::max(in, reach - 2 * g.padding[d]);
      out = (in + 2 * g.padding[d] - reach) / g.stride[d] + 1;
    } else {
      output_padding[d] = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max(g.stride[d], g.dilation[d])));
      out = (in - 1) * g.stride[d] - 2 * g.padding[d] + reach + output_padding[d];
      if (out < 1) {
        g.padding[d] = 0;
        out = (in - 1) * g.stride[d] + reach + output_padding[d];
      }
    }
    x_sizes.push_back(in);
    w_sizes.push_back(k);
    out_sizes.push_back(out);
  }
  for (size_t d = 0; d < out_sizes.size(); ++d) g.out_sizes[d] = out_sizes[d];
  Drawn x, w, bias;
  draw_conv_operand(x, rng, dtype, x_sizes);
  draw_conv_operand(w, rng, dtype, w_sizes);
  const bool has_bias = rng() % 2 == 0;
  if (has_bias) draw_tensor(bias, rng, dtype, {c_out}, false);
  std::vector<int64_t> stride(g.stride, g.stride + g.spatial), padding(g.padding, g.padding + g.spatial),
      dilation(g.dilation, g.dilation + g.spatial);
  std::ostringstream d;
  d << "convolution" << (g.transposed ? " transposed" : "") << " x " << x.text() << "; w " << w.text()
    << (has_bias ? "; bias " + bias.text() : std::string()) << "; stride " << ints(stride) << " padding "
    << ints(padding) << " dilation " << ints(dilation) << " output_padding " << ints(output_padding) << " groups "
    << g.groups;
  outcome.description = d.str();
  AtenTensorHandle made = nullptr;
  AtenTensorHandle bias_handle = has_bias ? bias.view : nullptr;
  if (aoti_torch_cuda_convolution(x.view, w.view, has_bias ? &bias_handle : nullptr, stride.data(), g.spatial,
                                  padding.data(), g.spatial, dilation.data(), g.spatial, g.transposed,
                                  output_padding.data(), g.spatial, g.groups, &made) != kShimSuccess) {
    outcome.failure = "the shim failed";
    return outcome;
  }
  Drawn result;
  adopt(result, made);
  if (result.sizes != out_sizes) {
    outcome.failure = "the output's sizes are " + ints(result.sizes) + ", expected " + ints(out_sizes);
    return outcome;
  }
  size_t count = 1;
  for (int64_t s : out_sizes) count *= static_cast<size_t>(s);
  DeviceDoubles value(count), magnitude(count);
  const ref::View rb = has_bias ? bias.reference() : ref::View{};
  REQUIRE(ref::convolution(x.reference(), w.reference(), has_bias ? &rb : nullptr, g, value.data, magnitude.data).empty());
  int64_t reduction = in_per_group;
  for (int dd = 0; dd < g.spatial; ++dd) reduction *= w_sizes[2 + static_cast<size_t>(dd)];
  const auto expected = download_doubles(value.data, count);
  const auto sizes = download_doubles(magnitude.data, count);
  outcome.failure = compare(dtype, download(result), result.offsets(), expected, &sizes, tolerance(dtype, reduction));
  return outcome;
}

enum class AttentionShim { Efficient, Flash, Cudnn };

// q, k or v as Inductor passes them: [b, h, l, e] dense, split from a
// [b, l, h*e] projection, or one third of a fused [b, l, 3, h, e] buffer.
void draw_attention_operand(Drawn& t, std::mt19937_64& rng, int32_t dtype, int64_t b, int64_t h, int64_t l, int64_t e,
                            unsigned layout, int part) {
  t.dtype = dtype;
  t.sizes = {b, h, l, e};
  if (layout == 0) {
    t.strides = {h * l * e, l * e, e, 1};
    t.offset = 0;
  } else if (layout == 1) {
    t.strides = {l * h * e, e, h * e, 1};
    t.offset = 0;
  } else {
    t.strides = {l * 3 * h * e, e, 3 * h * e, 1};
    t.offset = part * h * e;
  }
  if (rng() % 5 == 0) t.offset += 8;  // a view further into its buffer, still 16-byte aligned for float32
  upload(t, rng);
}

Outcome drawn_attention(std::mt19937_64& rng) {
  Outcome outcome;
  const auto shim = static_cast<AttentionShim>(rng() % 3);
  const unsigned dtype_pick = rng() % 10;
  int32_t dtype = dtype_pick < 4 ? ScalarType::Half : dtype_pick < 7 ? ScalarType::BFloat16 : ScalarType::Float;
  if (shim == AttentionShim::Flash && dtype == ScalarType::Float) dtype = ScalarType::Half;
  const int64_t B = static_cast<int64_t>(rng() % 2) + 1, H = static_cast<int64_t>(rng() % 4) + 1;
  const int64_t L = static_cast<int64_t>(rng() % 70) + 1;
  const int64_t S = rng() % 3 == 0 ? L : static_cast<int64_t>(rng() % 70) + 1;
  static const int64_t heads[] = {8, 16, 32, 64};
  const int64_t E = heads[rng() % std::size(heads)];
  const unsigned layout = static_cast<unsigned>(rng() % 3);
  const bool fused = layout == 2 && S == L;
  Drawn q, k, v, bias;
  draw_attention_operand(q, rng, dtype, B, H, L, E, fused ? 2 : layout % 2, 0);
  draw_attention_operand(k, rng, dtype, B, H, S, E, fused ? 2 : layout % 2, 1);
  draw_attention_operand(v, rng, dtype, B, H, S, E, fused ? 2 : layout % 2, 2);
  const bool has_bias = shim != AttentionShim::Flash && rng() % 2 == 0;
  const bool causal = !has_bias && rng() % 3 == 0;
  if (has_bias) {
    bias.dtype = dtype;
    bias.sizes = {B, H, L, S};
    const unsigned kind = static_cast<unsigned>(rng() % 3);
    if (kind == 0) bias.strides = {H * L * S, L * S, S, 1};
    else if (kind == 1) bias.strides = {0, 0, S, 1};  // one [L, S] mask for every batch and head
    else bias.strides = {S, 0, 0, 1};                 // a key padding mask per batch
    upload(bias, rng);
  }
  double scale_value = rng() % 2 ? 0.3 : 0.125;
  const bool given_scale = rng() % 2 == 0;
  const double scale = given_scale ? scale_value : 1.0 / std::sqrt(static_cast<double>(E));
  static const char* names[] = {"efficient", "flash", "cudnn"};
  std::ostringstream d;
  d << names[static_cast<int>(shim)] << " attention q " << q.text() << "; k " << k.text() << "; v " << v.text()
    << (has_bias ? "; bias " + bias.text() : std::string()) << (causal ? "; causal" : "")
    << (given_scale ? "; scale " + std::to_string(scale) : "");
  outcome.description = d.str();
  AtenTensorHandle ret[9] = {};
  int64_t lengths[2] = {};
  AtenTensorHandle bias_handle = has_bias ? bias.view : nullptr;
  double* scale_arg = given_scale ? &scale_value : nullptr;
  AOTITorchError status = kShimFailure;
  if (shim == AttentionShim::Efficient) {
    status = aoti_torch_cuda__scaled_dot_product_efficient_attention(
        q.view, k.view, v.view, has_bias ? &bias_handle : nullptr, 1, 0.0, causal, scale_arg, &ret[0], &ret[1],
        &ret[2], &ret[3]);
  } else if (shim == AttentionShim::Flash) {
    status = aoti_torch_cuda__scaled_dot_product_flash_attention(q.view, k.view, v.view, 0.0, causal, 0, scale_arg,
                                                                 &ret[0], &ret[1], &ret[2], &ret[3], &lengths[0],
                                                                 &lengths[1], &ret[6], &ret[7], &ret[8]);
  } else {
    status = aoti_torch_cuda__scaled_dot_product_cudnn_attention(
        q.view, k.view, v.view, has_bias ? &bias_handle : nullptr, 1, 0.0, causal, 0, scale_arg, &ret[0], &ret[1],
        &ret[2], &ret[3], &lengths[0], &lengths[1], &ret[6], &ret[7], &ret[8]);
  }
  if (status != kShimSuccess) {
    outcome.failure = "the shim failed";
    return outcome;
  }
  Drawn out, lse;
  adopt(out, ret[0]);
  adopt(lse, ret[1]);
  for (int i = 2; i < 9; ++i)
    if (ret[i]) aoti_torch_delete_tensor_object(ret[i]);
  if (out.sizes != std::vector<int64_t>{B, H, L, E}) {
    outcome.failure = "the output's sizes are " + ints(out.sizes);
    return outcome;
  }
  const size_t count = static_cast<size_t>(B * H * L * E);
  DeviceDoubles value(count), rows(static_cast<size_t>(B * H * L));
  const ref::View rbias = has_bias ? bias.reference() : ref::View{};
  REQUIRE(ref::attention(q.reference(), k.reference(), v.reference(), has_bias ? &rbias : nullptr, scale, causal,
                         value.data, rows.data)
              .empty());
  // The values are weighted means of v's, all within [-1, 1]: the error
  // is measured against 1.
  const std::vector<double> unit(count, 1.0);
  const double tol = dtype == ScalarType::Float ? 1e-5 : tolerance(dtype, 0);
  outcome.failure = compare(dtype, download(out), out.offsets(), download_doubles(value.data, count), &unit, tol);
  if (!outcome.failure.empty()) return outcome;
  // The log-sum-exp: [b, h, >= l] (efficient pads to 32), [b, h, l, 1] for cuDNN.
  if (lse.sizes.size() >= 3 && lse.sizes[2] >= L) {
    const auto want = download_doubles(rows.data, static_cast<size_t>(B * H * L));
    const auto bytes = download(lse);
    for (int64_t i = 0; i < B * H * L; ++i) {
      const int64_t bh = i / L, row = i % L;
      const int64_t at = (bh / H) * lse.strides[0] + (bh % H) * lse.strides[1] + row * lse.strides[2];
      const double got = decode(ScalarType::Float, &bytes[static_cast<size_t>(at) * 4]);
      const double expected = want[static_cast<size_t>(i)];
      if (std::isinf(expected) ? got != expected : !(std::fabs(got - expected) <= 1e-3 * std::max(1.0, std::fabs(expected)))) {
        outcome.failure = "log-sum-exp of row " + std::to_string(i) + ": got " + std::to_string(got) + ", expected " +
                          std::to_string(expected);
        return outcome;
      }
    }
  }
  return outcome;
}

// Runs `count` drawn cases; reports and counts the failures.
void run_cases(const char* family, int default_count, const std::function<Outcome(std::mt19937_64&)>& draw) {
  const char* seed_text = std::getenv("PTB_SHIM_CASES_SEED");
  const char* count_text = std::getenv("PTB_SHIM_CASES_COUNT");
  const uint64_t seed = seed_text ? std::strtoull(seed_text, nullptr, 10) : 20261207;
  const int count = count_text ? std::atoi(count_text) : default_count;
  std::mt19937_64 rng(seed);
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    Outcome outcome = draw(rng);
    if (outcome.failure.empty()) continue;
    ++failed;
    if (failed <= 25) MESSAGE(family << " case " << i << " failed: " << outcome.failure << "\n  " << outcome.description);
  }
  std::printf("[gpu] %s layouts: %d cases (seed %llu), %d failed\n", family, count,
              static_cast<unsigned long long>(seed), failed);
  CHECK(failed == 0);
}

}  // namespace

TEST_CASE("GPU shim layouts: GEMM shims on drawn layouts, dtypes and scalars match a float64 reference") {
  if (std::string missing = layouts_missing(); !missing.empty()) {
    test::skip(missing);
    return;
  }
  run_cases("gemm", 600, drawn_gemm);
}

// The LSTM policy's step: addmm(bias, h, W_hh^T) where h, the previous
// step's hidden state, is a view of the layer's output sequence [steps,
// batch, hidden] that is itself a view at an offset, so the step's offset is
// relative to the sequence's (ATen's _reinterpret_tensor adds them). Read
// as an absolute offset, every step multiplied the hidden state of the step
// before it.
TEST_CASE("GPU shim layouts: GEMM shims: an LSTM step's hidden state, a view of a view of the sequence buffer") {
  if (std::string missing = layouts_missing(); !missing.empty()) {
    test::skip(missing);
    return;
  }
  std::mt19937_64 rng(4);
  const int64_t steps = 32, batch = 4, hidden = 128, gates = 4 * hidden;
  for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{17}, steps - 1}) {
    Drawn sequence;  // the whole buffer; the layer's output starts one step in
    sequence.dtype = ScalarType::Float;
    sequence.sizes = {(steps + 1) * batch * hidden};
    sequence.strides = {1};
    upload(sequence, rng);
    const int64_t seq_sizes[] = {steps, batch, hidden};
    const int64_t seq_strides[] = {batch * hidden, hidden, 1};
    AtenTensorHandle layer_output = nullptr;
    REQUIRE(aoti_torch__reinterpret_tensor(sequence.storage, 3, seq_sizes, seq_strides, batch * hidden,
                                           &layer_output) == kShimSuccess);
    Drawn h;
    h.dtype = ScalarType::Float;
    h.sizes = {batch, hidden};
    h.strides = {hidden, 1};
    h.offset = batch * hidden + step * batch * hidden;  // absolute, for the reference
    REQUIRE(aoti_torch__reinterpret_tensor(layer_output, 2, h.sizes.data(), h.strides.data(), step * batch * hidden,
                                           &h.view) == kShimSuccess);
    aoti_torch_delete_tensor_object(layer_output);
    h.storage = sequence.storage;  // borrowed: sequence deletes it
    Drawn weight, bias, out;
    draw_tensor(weight, rng, ScalarType::Float, {hidden, gates}, false);
    weight.strides = {1, hidden};  // W_hh [gates, hidden] as its transpose
    aoti_torch_delete_tensor_object(weight.view);
    weight.view = nullptr;
    REQUIRE(aoti_torch__reinterpret_tensor(weight.storage, 2, weight.sizes.data(), weight.strides.data(), 0,
                                           &weight.view) == kShimSuccess);
    weight.offset = 0;
    draw_tensor(bias, rng, ScalarType::Float, {gates}, false);
    draw_tensor(out, rng, ScalarType::Float, {batch, gates}, false);
    GemmCase c;
    c.shim = GemmShim::Addmm;
    c.m = batch;
    c.n = gates;
    c.k = hidden;
    c.alpha = 1;
    c.beta = 1;
    const Outcome outcome = run_gemm(c, h, weight, &bias, &out);
    h.storage = nullptr;
    CHECK_MESSAGE(outcome.failure.empty(), "step " << step << ": " << outcome.failure << "\n  " << outcome.description);
  }
}

TEST_CASE("GPU shim layouts: convolution shim on drawn layouts, groups, strides and dilations matches a float64 reference") {
  if (std::string missing = layouts_missing(); !missing.empty()) {
    test::skip(missing);
    return;
  }
  run_cases("convolution", 300, drawn_convolution);
}

TEST_CASE("GPU shim layouts: attention shims on drawn layouts, masks and scales match a float64 reference") {
  if (std::string missing = layouts_missing(); !missing.empty()) {
    test::skip(missing);
    return;
  }
  run_cases("attention", 200, drawn_attention);
}

#else  // !PTB_TEST_SHIM_CORE

// Without the CUDA toolkit the shims are not built: each case says so.
TEST_CASE("GPU shim layouts: GEMM shims on drawn layouts, dtypes and scalars match a float64 reference") {
  ptb::test::skip("built without the built-in runtime (no CUDA toolkit at configure time)");
}
TEST_CASE("GPU shim layouts: GEMM shims: an LSTM step's hidden state, a view of a view of the sequence buffer") {
  ptb::test::skip("built without the built-in runtime (no CUDA toolkit at configure time)");
}
TEST_CASE("GPU shim layouts: convolution shim on drawn layouts, groups, strides and dilations matches a float64 reference") {
  ptb::test::skip("built without the built-in runtime (no CUDA toolkit at configure time)");
}
TEST_CASE("GPU shim layouts: attention shims on drawn layouts, masks and scales match a float64 reference") {
  ptb::test::skip("built without the built-in runtime (no CUDA toolkit at configure time)");
}

#endif  // PTB_TEST_SHIM_CORE
