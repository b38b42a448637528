// The attention family of the shim table: ATen's efficient, flash and cuDNN
// scaled-dot-product attention entry points (what F.scaled_dot_product_
// attention and nn.MultiheadAttention compile to), for inference: scores
// Q K^T on cuBLASLt into float32, softmax with the scale, the additive bias,
// the causal mask and the log-sum-exp (attention_softmax.cu), then P V on
// cuBLASLt. float16 and bfloat16 inputs multiply P in their own dtype, as
// flash attention does; float32 stays float32 throughout.
//
// The outputs have the sizes and strides ATen's meta functions give them,
// which the rest of the compiled program was built to read. The scores are
// made a slice of heads at a time, so their memory stays under kScoreBytes
// for any sequence length.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "engines/attention.h"
#include "engines/gemm.h"
#include "ptbundle/base/text.h"

namespace ptb::builtin {
namespace {

constexpr uint64_t kScoreBytes = 256ull << 20;

// A new GPU tensor of `sizes` with `strides`, in order on the current stream.
Result<Tensor> new_gpu(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int32_t dtype,
                       int device) {
  return empty_strided_cuda(sizes, strides, dtype, device);
}

// A 0-d int64 tensor in host memory holding 0: the philox seed and offset
// the entry points return, which inference never reads.
Result<Tensor> host_zero() {
  Tensor t;
  t.dtype = ScalarType::Long;
  PTB_TRY(t.storage, allocate(8, kDeviceCpu, 0));
  std::memset(t.storage->data, 0, 8);
  return t;
}

// Strides for a new tensor of `sizes` whose dimensions are laid out in the
// order `like`'s strides give (empty_like on a dense tensor).
std::vector<int64_t> strides_in_order_of(const Tensor& like, const std::vector<int64_t>& sizes) {
  std::vector<size_t> order(like.sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return like.strides[a] > like.strides[b]; });
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = running;
    running *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return strides;
}

// Whether `t` covers its storage span with no gap and no overlap.
bool dense(const Tensor& t) { return t.strides == strides_in_order_of(t, t.sizes); }

// [B, Lq, H, Ev] in memory, seen as [B, H, Lq, Ev]: the layout the
// efficient kernel writes.
std::vector<int64_t> heads_inside(int64_t b, int64_t h, int64_t l, int64_t e) {
  (void)b;
  return {l * h * e, e, h * e, 1};
}

// A [B, H, L, E] tensor seen as [B*H, L, E] for batched products, where its
// batch and head strides make one uniform stride and a matrix stride is 1.
std::optional<Tensor> batched_view(const Tensor& t) {
  const int64_t B = t.sizes[0], H = t.sizes[1], L = t.sizes[2], E = t.sizes[3];
  const bool uniform = B == 1 || H == 1 || t.strides[0] == H * t.strides[1];
  const bool inner = t.strides[3] == 1 || E == 1 || t.strides[2] == 1 || L == 1;
  if (!uniform || !inner) return std::nullopt;
  Tensor view = t;
  view.sizes = {B * H, L, E};
  view.strides = {H == 1 ? t.strides[0] : t.strides[1], t.strides[2], t.strides[3]};
  return view;
}

// An operand as [B*H, L, E]: the view above, else a contiguous copy.
Result<Tensor> as_batched(const Tensor& t) {
  if (auto view = batched_view(t)) return *view;
  PTB_TRY(Tensor packed, new_gpu(t.sizes, contiguous_strides(t.sizes), t.dtype, t.storage->device_index));
  PTB_CHECK(copy_elements(packed, t));
  const int64_t L = t.sizes[2], E = t.sizes[3];
  packed.sizes = {t.sizes[0] * t.sizes[1], L, E};
  packed.strides = {L * E, E, 1};
  return packed;
}

// Rows [first, first + count) of a [B*H, L, E] batch.
Tensor rows_of(const Tensor& batched, int64_t first, int64_t count) {
  Tensor slice = batched;
  slice.sizes[0] = count;
  slice.storage_offset += first * batched.strides[0];
  return slice;
}

Status check_request(const AttentionRequest& r) {
  for (const Tensor* t : {r.q, r.k, r.v}) {
    if (t->sizes.size() != 4) return invalid("query, key and value must be [batch, heads, length, dim]; got " + tensor_text(*t));
    if (t->storage->device_type != kDeviceCuda) return invalid("an operand is not on the GPU");
    if (t->dtype != r.q->dtype) return invalid("query, key and value of different dtypes");
  }
  if (r.q->dtype != ScalarType::Float && r.q->dtype != ScalarType::Half && r.q->dtype != ScalarType::BFloat16) {
    return invalid(std::string(scalar_type_name(r.q->dtype)) + "; expected float32, float16 or bfloat16");
  }
  const auto& q = r.q->sizes;
  const auto& k = r.k->sizes;
  const auto& v = r.v->sizes;
  if (k[0] != q[0] || v[0] != q[0] || k[1] != q[1] || v[1] != q[1] || k[3] != q[3] || v[2] != k[2]) {
    return invalid("query " + shape_text(q) + ", key " + shape_text(k) + ", value " + shape_text(v) +
                   " do not fit (the same batch and heads, key and query of one dim, key and value of one length)");
  }
  if (r.dropout != 0) return invalid("dropout " + std::to_string(r.dropout) + "; attention dropout is for training");
  if (r.bias) {
    if (r.bias->sizes.size() > 4) return invalid("attention bias " + tensor_text(*r.bias));
    if (r.bias->storage->device_type != kDeviceCuda) return invalid("the attention bias is not on the GPU");
    if (!is_floating_type(r.bias->dtype) || r.bias->itemsize() > 8) {
      return invalid("attention bias of " + std::string(scalar_type_name(r.bias->dtype)) + "; expected an additive floating bias");
    }
  }
  return {};
}

// The softmax's side of `r`: scale, causal mask, the bias broadcast by
// strides to [B, H, Lq, Lk] (right-aligned; a size-1 dimension broadcasts)
// and where the log-sum-exp goes.
Status attention_rows(const AttentionRequest& r, float* lse, const int64_t* lse_strides, kernels::AttentionRows& rows) {
  const Tensor& q = *r.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], Lq = q.sizes[2], E = q.sizes[3], Lk = r.k->sizes[2];
  rows.batch_heads = B * H;
  rows.heads = H;
  rows.lq = Lq;
  rows.lk = Lk;
  rows.scale = static_cast<float>(r.scale ? *r.scale : 1.0 / std::sqrt(static_cast<double>(E)));
  rows.causal = r.causal;
  if (r.bias) {
    const size_t lead = 4 - r.bias->sizes.size();
    const int64_t want[4] = {B, H, Lq, Lk};
    for (size_t d = 0; d < 4; ++d) {
      if (d < lead) continue;
      const int64_t size = r.bias->sizes[d - lead];
      if (size != 1 && size != want[d]) {
        return invalid("attention bias " + shape_text(r.bias->sizes) + " does not broadcast to " +
                       shape_text(std::vector<int64_t>{B, H, Lq, Lk}));
      }
      rows.bias_strides[d] = size == 1 ? 0 : r.bias->strides[d - lead];
    }
    rows.bias = r.bias->data();
    rows.bias_dtype = r.bias->dtype;
  }
  if (lse) {
    rows.lse = lse;
    for (int d = 0; d < 3; ++d) rows.lse_strides[d] = lse_strides[d];
  }
  return {};
}

// out = softmax(scale * q k^T + bias, causal) v, with `lse` (when given)
// the rows' log-sum-exp at its strides over [B, H, Lq].
Status attend(const AttentionRequest& r, const Tensor& out, float* lse, const int64_t* lse_strides) {
  PTB_CHECK(check_request(r));
  const Tensor& q = *r.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], Lq = q.sizes[2], E = q.sizes[3];
  const int64_t Lk = r.k->sizes[2], Ev = r.v->sizes[3];
  const int device = q.storage->device_index;
  const cudaStream_t stream = stream_for(q);
  if (B * H * Lq == 0) return {};
  if (Lk == 0) {
    // Nothing to attend to: zeros, as the fused kernels give.
    kernels::View view;
    if (!kernel_view(out, view)) return invalid("too many dimensions");
    cudaError_t code = kernels::scale(view, out.numel(), 0.0, stream);
    if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
    return {};
  }
  PTB_TRY(Tensor qb, as_batched(q));
  PTB_TRY(Tensor kb, as_batched(*r.k));
  PTB_TRY(Tensor vb, as_batched(*r.v));
  const int32_t p_dtype = q.dtype;  // P multiplies V in V's dtype
  // P V goes straight into `out` where cuBLASLt can write it as a batch (the
  // layouts the entry points give it for one batch, or heads outermost);
  // else into a packed batch copied over at the end.
  std::optional<Tensor> direct = batched_view(out);
  Tensor ob;
  if (direct) {
    ob = *direct;
  } else {
    PTB_TRY(ob, new_gpu({B * H, Lq, Ev}, {Lq * Ev, Ev, 1}, q.dtype, device));
  }

  kernels::AttentionRows rows;
  PTB_CHECK(attention_rows(r, lse, lse_strides, rows));
  const uint64_t per_row = static_cast<uint64_t>(Lq) * Lk * (4 + *scalar_type_size(p_dtype));
  const int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(kScoreBytes / std::max<uint64_t>(per_row, 1)), 1, B * H);
  for (int64_t first = 0; first < B * H; first += chunk) {
    const int64_t count = std::min(chunk, B * H - first);
    PTB_TRY(Tensor scores, new_gpu({count, Lq, Lk}, {Lq * Lk, Lk, 1}, ScalarType::Float, device));
    PTB_TRY(Tensor probabilities, new_gpu({count, Lq, Lk}, {Lq * Lk, Lk, 1}, p_dtype, device));
    Tensor keys_t = rows_of(kb, first, count);  // [count, E, Lk]: K transposed, no copy
    keys_t.sizes = {count, E, Lk};
    keys_t.strides = {kb.strides[0], kb.strides[2], kb.strides[1]};
    PTB_CHECK(matmul(scores, rows_of(qb, first, count), keys_t, 1.0, 0.0));
    rows.batch_heads = count;
    rows.first = first;
    cudaError_t code = kernels::attention_softmax(static_cast<const float*>(scores.data()), probabilities.data(),
                                                  p_dtype, rows, stream);
    if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
    PTB_CHECK(matmul(rows_of(ob, first, count), probabilities, rows_of(vb, first, count), 1.0, 0.0));
  }
  if (direct) return {};
  Tensor result = ob;
  result.sizes = {B, H, Lq, Ev};
  result.strides = {H * Lq * Ev, Lq * Ev, Ev, 1};
  return copy_elements(out, result);
}

}  // namespace


Result<AttentionOutputs> efficient_attention(const AttentionRequest& r, bool compute_log_sumexp) {
  PTB_CHECK(check_request(r));
  const Tensor& q = *r.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], Lq = q.sizes[2], Ev = r.v->sizes[3];
  const int device = q.storage->device_index;
  PTB_TRY(Tensor out, new_gpu({B, H, Lq, Ev}, heads_inside(B, H, Lq, Ev), q.dtype, device));
  // The kernel's log-sum-exp rows are padded to a multiple of 32.
  const int64_t lse_columns = compute_log_sumexp ? (Lq + 31) / 32 * 32 : 0;
  PTB_TRY(Tensor lse, new_gpu({B, H, lse_columns}, {H * lse_columns, lse_columns, 1}, ScalarType::Float, device));
  // Only the padding past Lq is left for the softmax to skip.
  if (lse_columns > Lq) cudaMemsetAsync(lse.data(), 0, static_cast<size_t>(B * H * lse_columns) * 4, stream_for(q));
  const int64_t lse_strides[3] = {H * lse_columns, lse_columns, 1};
  PTB_CHECK(attend(r, out, lse_columns ? static_cast<float*>(lse.data()) : nullptr, lse_strides));
  auto seed = host_zero();
  auto offset = host_zero();
  if (!seed.ok() || !offset.ok()) return invalid("out of host memory");
  return AttentionOutputs{std::move(out), std::move(lse), std::move(*seed), std::move(*offset), std::nullopt, Lq,
                          r.k->sizes[2]};
}

Result<AttentionOutputs> flash_attention(const AttentionRequest& r) {
  PTB_CHECK(check_request(r));
  const Tensor& q = *r.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], Lq = q.sizes[2], Lk = r.k->sizes[2], Ev = r.v->sizes[3];
  const int device = q.storage->device_index;
  const std::vector<int64_t> sizes = {B, H, Lq, Ev};
  auto out = new_gpu(sizes, dense(q) ? strides_in_order_of(q, sizes) : heads_inside(B, H, Lq, Ev), q.dtype, device);
  auto lse = new_gpu({B, H, Lq}, {H * Lq, Lq, 1}, ScalarType::Float, device);
  auto debug = new_gpu({0}, {1}, q.dtype, device);
  if (!out.ok() || !lse.ok() || !debug.ok()) return invalid("cannot allocate the outputs on the GPU");
  const int64_t lse_strides[3] = {H * Lq, Lq, 1};
  PTB_CHECK(attend(r, *out, static_cast<float*>(lse->data()), lse_strides));
  auto seed = host_zero();
  auto offset = host_zero();
  if (!seed.ok() || !offset.ok()) return invalid("out of host memory");
  return AttentionOutputs{std::move(*out), std::move(*lse), std::move(*seed), std::move(*offset), std::move(*debug),
                          Lq, Lk};
}

Result<AttentionOutputs> cudnn_attention(const AttentionRequest& r, bool compute_log_sumexp) {
  PTB_CHECK(check_request(r));
  const Tensor& q = *r.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], Lq = q.sizes[2], Lk = r.k->sizes[2], Ev = r.v->sizes[3];
  const int device = q.storage->device_index;
  const std::vector<int64_t> sizes = {B, H, Lq, Ev};
  auto out = new_gpu(sizes, strides_in_order_of(q, sizes), q.dtype, device);
  const std::vector<int64_t> lse_sizes = compute_log_sumexp ? std::vector<int64_t>{B, H, Lq, 1} : std::vector<int64_t>{0};
  auto lse = new_gpu(lse_sizes, contiguous_strides(lse_sizes), ScalarType::Float, device);
  if (!out.ok() || !lse.ok()) return invalid("cannot allocate the outputs on the GPU");
  const int64_t lse_strides[3] = {H * Lq, Lq, 1};
  PTB_CHECK(attend(r, *out, compute_log_sumexp ? static_cast<float*>(lse->data()) : nullptr, lse_strides));
  auto seed = host_zero();
  auto offset = host_zero();
  if (!seed.ok() || !offset.ok()) return invalid("out of host memory");
  return AttentionOutputs{std::move(*out), std::move(*lse), std::move(*seed), std::move(*offset), std::nullopt, Lq, Lk};
}

}  // namespace ptb::builtin
