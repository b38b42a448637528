// The GEMM family of the shim table on cuBLASLt: mm, addmm, bmm, baddbmm and
// addmm with an activation, as ATen computes them (row-major tensors, any
// strides with one of them 1, a bias broadcast over the rows). float32 runs
// in full float32 (no TF32: what eager PyTorch does by default), float16 and
// bfloat16 accumulate in float32, float64 in float64.
//
// cuBLASLt is column-major: a row-major D = A B is computed as the
// column-major D^T = B^T A^T, which reads the same memory with no copy; a
// column-major output takes the other orientation. An operand with neither
// stride 1 is copied to a contiguous scratch tensor first. Each shape's
// descriptors are made once and cached for the process, with cuBLASLt's
// heuristic candidates; the first call outside a graph capture times them on
// the real operands and keeps the fastest, since the heuristics' first pick
// is often not the fastest for small shapes. Each stream gets one workspace.
// The heuristics offer split-k candidates themselves where the output has
// few tiles, so the search covers split-k too.

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "engines/cuda_libraries.h"
#include "engines/gemm.h"
#include "kernels/kernels.h"
#include "engines/route_check.h"
#include "engines/tuned.h"
#include "ptbundle/base/text.h"

namespace ptb::builtin {
namespace {

constexpr size_t kWorkspaceBytes = 32ull << 20;  // what cuBLAS asks for on Hopper
constexpr int kCandidates = 16;                   // heuristic results timed per shape

// One operand as cuBLASLt stores it: column-major rows x cols with leading
// dimension ld, and whether the product reads it transposed.
struct Stored {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  bool transpose = false;
  int64_t batch_stride = 0;
};

// A logical row-major [r, c] view with strides (s0, s1): as cuBLASLt
// stores it, and with the transpose that yields the logical matrix
// (`want_transposed`: yield its transpose instead). nullopt when neither
// stride is 1 (with the other covering the rows), so it must be copied.
std::optional<Stored> store(const void* data, int64_t r, int64_t c, int64_t s0, int64_t s1, bool want_transposed) {
  if (c == 1) s1 = 1;
  if (r == 1) s0 = std::max<int64_t>(c, 1);
  if (s1 == 1 && s0 >= std::max<int64_t>(c, 1)) {
    // Column-major [c, r]: the memory holds X^T.
    return Stored{data, c, r, s0, !want_transposed, 0};
  }
  if (s0 == 1 && s1 >= std::max<int64_t>(r, 1)) {
    // Column-major [r, c]: the memory holds X.
    return Stored{data, r, c, s1, want_transposed, 0};
  }
  return std::nullopt;
}

cudaDataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Half: return CUDA_R_16F;
    case ScalarType::BFloat16: return CUDA_R_16BF;
    case ScalarType::Double: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

bool gemm_dtype(int32_t dtype) {
  return dtype == ScalarType::Float || dtype == ScalarType::Half || dtype == ScalarType::BFloat16 || dtype == ScalarType::Double;
}

unsigned alignment(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  for (unsigned bytes : {16u, 8u, 4u, 2u})
    if (address % bytes == 0) return bytes;
  return 1;
}

// Everything the descriptors and the algorithm depend on.
struct PlanKey {
  int device;
  int32_t dtype;     // of A and B
  int32_t cd_dtype;  // of C and D
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c;
  bool transa, transb;
  cublasLtEpilogue_t epilogue;
  unsigned align_a, align_b, align_c, align_bias;
  bool operator<(const PlanKey& o) const {
    return std::tie(device, dtype, cd_dtype, m, n, k, batch, lda, ldb, ldc, stride_a, stride_b, stride_c, transa,
                    transb, epilogue, align_a, align_b, align_c, align_bias) <
           std::tie(o.device, o.dtype, o.cd_dtype, o.m, o.n, o.k, o.batch, o.lda, o.ldb, o.ldc, o.stride_a, o.stride_b,
                    o.stride_c, o.transa, o.transb, o.epilogue, o.align_a, o.align_b, o.align_c, o.align_bias);
  }
};

// The key's words in a tune file: every field but the device, which the
// file's GPU entry stands for.
std::string key_text(const PlanKey& k) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "m=" + n(k.m) + " n=" + n(k.n) + " k=" + n(k.k) + " batch=" + n(k.batch) + " dtype=" + n(k.dtype) + "," +
         n(k.cd_dtype) + " ld=" + n(k.lda) + "," + n(k.ldb) + "," + n(k.ldc) + " stride=" + n(k.stride_a) + "," +
         n(k.stride_b) + "," + n(k.stride_c) + " trans=" + (k.transa ? "T" : "N") + (k.transb ? "T" : "N") +
         " epilogue=" + n(static_cast<int64_t>(k.epilogue)) + " align=" + n(k.align_a) + "," + n(k.align_b) + "," +
         n(k.align_c) + "," + n(k.align_bias);
}

constexpr const char* kAlgoPrefix = "algo=";

struct Plan {
  const CublasLt* lt = nullptr;
  std::string key;  // key_text
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};  // what calls run: the heuristics' first, then the search's
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  bool searched = false;
  std::mutex use;  // the bias pointer is an attribute of desc; the search sets algo
  ~Plan() {
    if (!lt) return;
    if (a) lt->layout_destroy(a);
    if (b) lt->layout_destroy(b);
    if (c) lt->layout_destroy(c);
    if (desc) lt->desc_destroy(desc);
  }
};

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

struct GemmState {
  std::mutex mutex;
  std::map<int, cublasLtHandle_t> handles;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  std::map<std::pair<int, cudaStream_t>, Workspace> workspaces;
};

GemmState& state() {
  static GemmState* kept = new GemmState;  // lives as long as the process: plans outlive every model
  return *kept;
}

std::string lt_error(const CublasLt& lt, cublasStatus_t status) {
  return std::string("cuBLASLt: ") + (lt.status_string ? lt.status_string(status) : "error") + " (" +
         std::to_string(static_cast<int>(status)) + ")";
}

// The stream's workspace; none while the stream is being captured into a
// graph and has none yet (an allocation cannot be captured).
Workspace workspace_for(int device, cudaStream_t stream) {
  GemmState& s = state();
  std::lock_guard lock(s.mutex);
  Workspace& w = s.workspaces[{device, stream}];
  if (w.data) return w;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capturing);
  if (capturing != cudaStreamCaptureStatusNone) return {};
  if (cudaMalloc(&w.data, kWorkspaceBytes) != cudaSuccess) {
    cudaGetLastError();
    w.data = nullptr;
    return {};
  }
  w.bytes = kWorkspaceBytes;
  return w;
}

Result<cublasLtHandle_t> handle_for(const CublasLt& lt, int device) {
  GemmState& s = state();
  std::lock_guard lock(s.mutex);
  cublasLtHandle_t& handle = s.handles[device];
  if (!handle) {
    cublasStatus_t status = lt.create(&handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      handle = nullptr;
      return invalid(lt_error(lt, status));
    }
  }
  return handle;
}

template <class T>
Status set_desc(const CublasLt& lt, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                const T& value) {
  cublasStatus_t status = lt.desc_set(desc, attribute, &value, sizeof value);
  if (status != CUBLAS_STATUS_SUCCESS) return invalid(lt_error(lt, status));
  return {};
}

Result<cublasLtMatrixLayout_t> make_layout(const CublasLt& lt, cudaDataType_t type, int64_t rows, int64_t cols,
                                           int64_t ld, int64_t batch, int64_t batch_stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  cublasStatus_t status = lt.layout_create(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
  if (status != CUBLAS_STATUS_SUCCESS) return invalid(lt_error(lt, status));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    lt.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    lt.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride);
  }
  return layout;
}

Result<Plan*> plan_for(const CublasLt& lt, cublasLtHandle_t handle, const PlanKey& key, size_t workspace) {
  GemmState& s = state();
  {
    std::lock_guard lock(s.mutex);
    auto found = s.plans.find(key);
    if (found != s.plans.end()) return found->second.get();
  }
  auto plan = std::make_unique<Plan>();
  plan->lt = &lt;
  plan->key = key_text(key);
  const cudaDataType_t type = data_type(key.dtype), cd_type = data_type(key.cd_dtype);
  const bool doubles = key.cd_dtype == ScalarType::Double;
  const cublasComputeType_t compute = doubles ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  cublasStatus_t status = lt.desc_create(&plan->desc, compute, doubles ? CUDA_R_64F : CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return invalid(lt_error(lt, status));
  const cublasOperation_t transa = key.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t transb = key.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  PTB_CHECK(set_desc(lt, plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, transa));
  PTB_CHECK(set_desc(lt, plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, transb));
  PTB_CHECK(set_desc(lt, plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, key.epilogue));
  const int64_t a_rows = key.transa ? key.k : key.m, a_cols = key.transa ? key.m : key.k;
  const int64_t b_rows = key.transb ? key.n : key.k, b_cols = key.transb ? key.k : key.n;
  PTB_TRY(plan->a, make_layout(lt, type, a_rows, a_cols, key.lda, key.batch, key.stride_a));
  PTB_TRY(plan->b, make_layout(lt, type, b_rows, b_cols, key.ldb, key.batch, key.stride_b));
  PTB_TRY(plan->c, make_layout(lt, cd_type, key.m, key.n, key.ldc, key.batch, key.stride_c));

  cublasLtMatmulPreference_t preference = nullptr;
  lt.preference_create(&preference);
  const uint64_t bytes = workspace;
  lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes);
  const uint32_t aligns[] = {key.align_a, key.align_b, key.align_c, key.align_c};
  lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aligns[0], sizeof aligns[0]);
  lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &aligns[1], sizeof aligns[1]);
  lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &aligns[2], sizeof aligns[2]);
  lt.preference_set(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &aligns[3], sizeof aligns[3]);
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  status = lt.heuristic(handle, plan->desc, plan->a, plan->b, plan->c, plan->c, preference, kCandidates, results, &found);
  lt.preference_destroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    return invalid("cuBLASLt has no algorithm for this product" +
                   (status != CUBLAS_STATUS_SUCCESS ? " (" + lt_error(lt, status) + ")" : std::string()));
  }
  plan->algo = results[0].algo;
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i]);
  std::lock_guard lock(s.mutex);
  auto& slot = s.plans[key];
  if (!slot) slot = std::move(plan);
  return slot.get();
}

// A GEMM ready for cuBLASLt: column-major m x n = op(a) m x k * op(b) k x n.
struct Product {
  int32_t dtype = ScalarType::Float;     // of A and B
  int32_t cd_dtype = ScalarType::Float;  // of D (and C)
  int64_t m = 0, n = 0, k = 0, batch = 1;
  Stored a, b;
  void* d = nullptr;
  int64_t ldd = 0, stride_d = 0;
  double alpha = 1, beta = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};

// Times the plan's candidates on p's operands and keeps the fastest. They
// write a scratch D, while C stays p.d, so that beta's term reads what the
// call will read and p.d is untouched. Once per plan, outside captures; a
// candidate that fails is passed over, and where no scratch can be had the
// heuristics' pick stays.
void search(Plan& plan, cublasLtHandle_t handle, const Product& p, const void* alpha, const void* beta,
            const Workspace& work, cudaStream_t stream) {
  plan.searched = true;
  if (plan.candidates.size() < 2) return;
  const uint64_t span = static_cast<uint64_t>((p.batch - 1) * p.stride_d + (p.n - 1) * p.ldd + p.m);
  void* scratch = nullptr;
  if (cudaMallocAsync(&scratch, span * scalar_type_size(p.cd_dtype).value_or(8), stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  const CublasLt& lt = *plan.lt;
  float best = -1;
  size_t chosen = 0;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const cublasLtMatmulHeuristicResult_t& candidate = plan.candidates[i];
    if (candidate.workspaceSize > (work.data ? work.bytes : 0)) continue;
    bool failed = false;
    const float ms = mean_ms(stream, Timing::gpu, [&] {
      failed |= lt.matmul(handle, plan.desc, alpha, p.a.data, plan.a, p.b.data, plan.b, beta, p.d, plan.c, scratch,
                          plan.c, &candidate.algo, work.data, work.data ? work.bytes : 0,
                          stream) != CUBLAS_STATUS_SUCCESS;
    });
    if (tracing()) {
      int32_t slices = 1;
      size_t written = 0;
      lt.algo_config_get(&candidate.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &slices, sizeof slices, &written);
      std::fprintf(stderr, "  gemm candidate %zu: %.4f ms%s, %.2f waves, split-k %d, %zu bytes of workspace\n", i, ms,
                   failed ? " (failed)" : "", candidate.wavesCount, slices, candidate.workspaceSize);
    }
    if (failed || ms < 0) continue;
    if (best < 0 || ms < best) best = ms, chosen = i;
  }
  cudaFreeAsync(scratch, stream);
  cudaGetLastError();
  if (best >= 0) plan.algo = plan.candidates[chosen].algo;
  if (tracing()) {
    std::fprintf(stderr, "gemm %lldx%lldx%lld batch %lld dtype %d: candidate %zu of %zu chosen (%.4f ms)\n",
                 static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                 static_cast<long long>(p.batch), p.dtype, chosen, plan.candidates.size(), best);
  }
}

// The tune file's algorithm for the plan, when it has one for this
// cuBLASLt that cuBLASLt accepts for the plan's descriptors with the
// workspace there is; a recorded algorithm that does not fit is reported
// and the shape searched.
bool use_recorded(Plan& plan, cublasLtHandle_t handle, int device, const Workspace& work) {
  const CublasLt& lt = *plan.lt;
  const auto recorded = recorded_choice(device, kTunedGemm, plan.key, lt.version());
  if (!recorded) return false;
  cublasLtMatmulAlgo_t algo{};
  const std::string prefix = kAlgoPrefix;
  if (recorded->compare(0, prefix.size(), prefix) != 0 ||
      !bytes_of_hex(recorded->substr(prefix.size()), &algo, sizeof algo)) {
    refuse_recorded(device, kTunedGemm, plan.key,
                    "the choice is not \"algo=\" and " + std::to_string(2 * sizeof algo) +
                        " hex digits (a cuBLASLt algorithm of " + std::to_string(sizeof algo) + " bytes)");
    return false;
  }
  cublasLtMatmulHeuristicResult_t checked{};
  const cublasStatus_t status =
      lt.algo_check(handle, plan.desc, plan.a, plan.b, plan.c, plan.c, &algo, &checked);
  if (status != CUBLAS_STATUS_SUCCESS) {
    refuse_recorded(device, kTunedGemm, plan.key, "cuBLASLt refuses the algorithm for this product (" + lt_error(lt, status) + ")");
    return false;
  }
  // No workspace yet (a first call inside a capture): tried again at a
  // call that has one.
  if (checked.workspaceSize > 0 && !work.data) return false;
  if (checked.workspaceSize > work.bytes) {
    refuse_recorded(device, kTunedGemm, plan.key,
                    "the algorithm needs " + std::to_string(checked.workspaceSize) + " bytes of workspace; " +
                        std::to_string(work.bytes) + " are there");
    return false;
  }
  plan.algo = algo;
  plan.searched = true;
  note_choice(device, kTunedGemm, plan.key, *recorded, lt.version(), false);
  if (tracing()) std::fprintf(stderr, "gemm %s: the tune file's algorithm\n", plan.key.c_str());
  return true;
}

Status run_product(const Product& p, int device, cudaStream_t stream) {
  const CublasLt* lt = cublas_lt();
  if (!lt) return invalid("cuBLAS cannot be opened: " + why_cublas());
  PTB_TRY(cublasLtHandle_t handle, handle_for(*lt, device));
  const Workspace work = workspace_for(device, stream);
  PlanKey key{device,       p.dtype,       p.cd_dtype,     p.m,          p.n,          p.k,        p.batch,      p.a.ld,
              p.b.ld,       p.ldd,         p.a.batch_stride, p.b.batch_stride, p.stride_d, p.a.transpose,
              p.b.transpose, p.epilogue,   alignment(p.a.data), alignment(p.b.data), alignment(p.d),
              p.bias ? alignment(p.bias) : 16u};
  PTB_TRY(Plan* plan, plan_for(*lt, handle, key, work.bytes));
  std::lock_guard lock(plan->use);
  if (p.bias) PTB_CHECK(set_desc(*lt, plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias));
  const float alpha32 = static_cast<float>(p.alpha), beta32 = static_cast<float>(p.beta);
  const void* alpha = p.cd_dtype == ScalarType::Double ? static_cast<const void*>(&p.alpha) : &alpha32;
  const void* beta = p.cd_dtype == ScalarType::Double ? static_cast<const void*>(&p.beta) : &beta32;
  // A recorded algorithm is checked, not timed, so it may be taken inside a
  // capture too; a search waits for a call outside one.
  if (!plan->searched && !use_recorded(*plan, handle, device, work) && !capturing(stream)) {
    search(*plan, handle, p, alpha, beta, work, stream);
    note_choice(device, kTunedGemm, plan->key, kAlgoPrefix + hex_of(&plan->algo, sizeof plan->algo), lt->version(),
                true);
  }
  cublasStatus_t status = lt->matmul(handle, plan->desc, alpha, p.a.data, plan->a, p.b.data, plan->b, beta, p.d,
                                     plan->c, p.d, plan->c, &plan->algo, work.data, work.data ? work.bytes : 0, stream);
  if (status != CUBLAS_STATUS_SUCCESS) return invalid(lt_error(*lt, status));
  return {};
}

// A batch of row-major matrices: [batch, rows, cols] with its strides.
struct Batched {
  const Tensor* tensor;
  int64_t batch, rows, cols, s_batch, s0, s1;
};

Batched batched(const Tensor& t) {
  if (t.sizes.size() == 3) return {&t, t.sizes[0], t.sizes[1], t.sizes[2], t.strides[0], t.strides[1], t.strides[2]};
  return {&t, 1, t.sizes[0], t.sizes[1], 0, t.strides[0], t.strides[1]};
}

// A contiguous copy of `t` on the GPU, for an operand cuBLASLt cannot read.
Result<Tensor> contiguous_copy(const Tensor& t) {
  PTB_TRY(Tensor made, empty_like(t));
  PTB_CHECK(copy_elements(made, t));
  return made;
}

// out = beta * out + alpha * a @ b over a batch, with out already holding
// what beta scales (or anything, when beta is 0). `bias` and `epilogue` as
// cuBLASLt takes them (a vector over out's columns).
Status matmul_into(const Tensor& out, const Tensor& a_tensor, const Tensor& b_tensor, double alpha, double beta,
                   cublasLtEpilogue_t epilogue, const void* bias) {
  if (tracing()) {
    std::fprintf(stderr, "gemm out %s a %s b %s alpha %g beta %g epilogue %d\n", tensor_text(out).c_str(),
                 tensor_text(a_tensor).c_str(), tensor_text(b_tensor).c_str(), alpha, beta, static_cast<int>(epilogue));
  }
  std::optional<Tensor> a_copy, b_copy;
  Batched a = batched(a_tensor), b = batched(b_tensor), d = batched(out);
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  const int device = out.storage->device_index;
  const cudaStream_t stream = stream_for(out);
  if (M == 0 || N == 0 || d.batch == 0) return {};
  if (K == 0) {
    // Nothing to multiply: out = beta * out, which holds what beta scales.
    kernels::View view;
    if (!kernel_view(out, view)) return invalid("an output of more than " + std::to_string(kernels::kMaxDims) + " dimensions");
    cudaError_t code = kernels::scale(view, out.numel(), beta, stream);
    if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
    return {};
  }
  // D row-major: D^T = B^T A^T (m = N, n = M). D column-major: D = A B.
  const bool row_major = (d.s1 == 1 || N == 1) && (d.s0 >= std::max<int64_t>(N, 1) || M == 1);
  const bool col_major = !row_major && (d.s0 == 1 || M == 1) && (d.s1 >= std::max<int64_t>(M, 1) || N == 1);
  if (!row_major && !col_major) {
    // An output cuBLASLt cannot write: into a contiguous copy, then back.
    PTB_TRY(Tensor staged, contiguous_copy(out));
    PTB_CHECK(matmul_into(staged, a_tensor, b_tensor, alpha, beta, epilogue, bias));
    return copy_elements(out, staged);
  }
  auto stored_a = store(a_tensor.data(), M, K, a.s0, a.s1, row_major);
  if (!stored_a) {
    PTB_TRY(a_copy, contiguous_copy(a_tensor));
    a = batched(*a_copy);
    stored_a = store(a_copy->data(), M, K, a.s0, a.s1, row_major);
  }
  auto stored_b = store(b_tensor.data(), K, N, b.s0, b.s1, row_major);
  if (!stored_b) {
    PTB_TRY(b_copy, contiguous_copy(b_tensor));
    b = batched(*b_copy);
    stored_b = store(b_copy->data(), K, N, b.s0, b.s1, row_major);
  }
  stored_a->batch_stride = a.batch > 1 ? a.s_batch : 0;
  stored_b->batch_stride = b.batch > 1 ? b.s_batch : 0;
  Product p;
  p.dtype = a_tensor.dtype;
  p.cd_dtype = out.dtype;
  p.batch = d.batch;
  p.k = K;
  p.d = out.data();
  p.alpha = alpha;
  p.beta = beta;
  p.epilogue = epilogue;
  p.bias = bias;
  p.stride_d = d.batch > 1 ? d.s_batch : 0;
  if (row_major) {
    p.m = N;
    p.n = M;
    p.a = *stored_b;
    p.b = *stored_a;
    p.ldd = M == 1 ? std::max<int64_t>(N, 1) : d.s0;
  } else {
    p.m = M;
    p.n = N;
    p.a = *stored_a;
    p.b = *stored_b;
    p.ldd = N == 1 ? std::max<int64_t>(M, 1) : d.s1;
  }
  return run_product(p, device, stream);
}

// The checks every GEMM shim makes: dtypes, devices and sizes agree.
Status check_operands(const Tensor& out, const Tensor& a, const Tensor& b, size_t dims) {
  for (const Tensor* t : {&out, &a, &b}) {
    if (t->sizes.size() != dims) {
      return invalid(std::to_string(t->sizes.size()) + "-d operand; expected " + std::to_string(dims) + "-d");
    }
    if (t->storage->device_type != kDeviceCuda) return invalid("an operand is not on the GPU");
    if (t->dtype != out.dtype) {
      return invalid("operands of " + std::string(scalar_type_name(a.dtype)) + ", " +
                     std::string(scalar_type_name(b.dtype)) + " into " + std::string(scalar_type_name(out.dtype)));
    }
  }
  if (!gemm_dtype(out.dtype)) {
    return invalid(std::string(scalar_type_name(out.dtype)) + "; expected float32, float16, bfloat16 or float64");
  }
  const size_t r = dims - 2, c = dims - 1;
  if (a.sizes[c] != b.sizes[r] || out.sizes[r] != a.sizes[r] || out.sizes[c] != b.sizes[c] ||
      (dims == 3 && (a.sizes[0] != out.sizes[0] || b.sizes[0] != out.sizes[0]))) {
    return invalid("shapes " + shape_text(a.sizes) + " @ " + shape_text(b.sizes) + " into " + shape_text(out.sizes));
  }
  return {};
}

// `self` broadcast into `out` (ATen's expand), as addmm and baddbmm start.
Status broadcast_into(const Tensor& out, const Tensor& self) {
  if (self.sizes.size() > out.sizes.size()) {
    return invalid("the added tensor " + shape_text(self.sizes) + " has more dimensions than " + shape_text(out.sizes));
  }
  Tensor expanded = self;
  const size_t lead = out.sizes.size() - self.sizes.size();
  expanded.sizes = out.sizes;
  expanded.strides.assign(out.sizes.size(), 0);
  for (size_t i = 0; i < self.sizes.size(); ++i) {
    const int64_t size = self.sizes[i];
    if (size != out.sizes[lead + i] && size != 1) {
      return invalid("the added tensor " + shape_text(self.sizes) + " does not broadcast to " + shape_text(out.sizes));
    }
    expanded.strides[lead + i] = size == 1 ? 0 : self.strides[i];
  }
  return copy_elements(out, expanded);
}

// The vector cuBLASLt's bias epilogue adds over out's columns, when `self`
// is one: 1-d of out's columns, [1, N], or [M, N] with a row stride of 0
// (the bias as max-autotune's wrappers pass it, expanded over the rows:
// taken as a tensor to copy, it cost a 2-MiB broadcast before each 512-row
// product), contiguous along the columns, out's dtype.
const void* bias_vector(const Tensor& out, const Tensor& self) {
  const int64_t columns = out.sizes.back();
  if (self.dtype != out.dtype || self.storage->device_type != kDeviceCuda) return nullptr;
  const bool row = self.sizes.size() == 1 ||
                   (self.sizes.size() == 2 && (self.sizes[0] == 1 || (self.strides[0] == 0 && self.sizes[0] == out.sizes[0])));
  if (!row || self.sizes.back() != columns || (columns > 1 && self.strides.back() != 1)) return nullptr;
  return self.data();
}

}  // namespace

Status matmul(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (a.dtype != b.dtype) return invalid("a product of " + std::string(scalar_type_name(a.dtype)) + " and " + std::string(scalar_type_name(b.dtype)));
  return matmul_into(out, a, b, alpha, beta, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
}

Status addmm_into(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta,
                  double alpha, Activation activation) {
  PTB_CHECK(check_operands(out, mat1, mat2, 2));
  const bool epilogue_bias = beta == 1.0 && bias_vector(out, self) && mat1.sizes[0] > 1 &&
                             (out.strides[1] == 1 || out.sizes[1] == 1);
  if (epilogue_bias) {
    cublasLtEpilogue_t epilogue = activation == Activation::Relu   ? CUBLASLT_EPILOGUE_RELU_BIAS
                                  : activation == Activation::Gelu ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                   : CUBLASLT_EPILOGUE_BIAS;
    Status fused = matmul_into(out, mat1, mat2, alpha, 0.0, epilogue, bias_vector(out, self));
    if (fused.ok()) return {};
    // No fused algorithm for this shape: the general way below.
  }
  if (beta != 0.0) {
    PTB_CHECK(broadcast_into(out, self));
  }
  PTB_CHECK(matmul_into(out, mat1, mat2, alpha, beta, CUBLASLT_EPILOGUE_DEFAULT, nullptr));
  if (activation == Activation::None) return {};
  kernels::View view;
  kernel_view(out, view);  // 2-d
  cudaError_t code = kernels::activate(view, out.numel(), activation == Activation::Relu ? kernels::Act::Relu
                                                                                        : kernels::Act::GeluTanh,
                                       stream_for(out));
  if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
  return {};
}

Status baddbmm_into(const Tensor& out, const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta,
                    double alpha) {
  PTB_CHECK(check_operands(out, batch1, batch2, 3));
  if (beta != 0.0) {
    PTB_CHECK(broadcast_into(out, self));
  }
  return matmul_into(out, batch1, batch2, alpha, beta, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
}

Status mm_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  const size_t dims = a.sizes.size();
  PTB_CHECK(check_operands(out, a, b, dims == 3 ? 3 : 2));
  return matmul_into(out, a, b, 1.0, 0.0, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
}

}  // namespace ptb::builtin
