// Scaled dot-product attention for inference (attention.cc): the outputs
// ATen's efficient, flash and cuDNN entry points return, computed as Q K^T
// on cuBLASLt, a softmax kernel, and P V on cuBLASLt.
#pragma once

#include <cstdint>
#include <optional>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

struct AttentionRequest {
  const Tensor* q = nullptr;
  const Tensor* k = nullptr;
  const Tensor* v = nullptr;
  const Tensor* bias = nullptr;
  bool causal = false;
  std::optional<double> scale;
  double dropout = 0;
};

// What an entry point hands back: the output, the log-sum-exp, the philox
// seed and offset (0-d host tensors holding 0: inference draws nothing), the
// debug mask where the entry point returns one (empty), and the sequence
// lengths.
struct AttentionOutputs {
  Tensor out;
  Tensor lse;
  Tensor seed;
  Tensor offset;
  std::optional<Tensor> debug;
  int64_t lq = 0, lk = 0;
};

// _scaled_dot_product_efficient_attention: the output with heads inside,
// the log-sum-exp rows padded to a multiple of 32 (none without
// `compute_log_sumexp`).
Result<AttentionOutputs> efficient_attention(const AttentionRequest& r, bool compute_log_sumexp);
// _scaled_dot_product_flash_attention: the output laid out as the query.
Result<AttentionOutputs> flash_attention(const AttentionRequest& r);
// _scaled_dot_product_cudnn_attention: the output laid out as the query,
// the log-sum-exp [B, H, Lq, 1] (empty without `compute_log_sumexp`).
Result<AttentionOutputs> cudnn_attention(const AttentionRequest& r, bool compute_log_sumexp);

}  // namespace ptb::builtin
