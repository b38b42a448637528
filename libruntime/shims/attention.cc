// The attention family of the shim table: ATen's efficient, flash and cuDNN
// scaled-dot-product attention entry points (engines/attention.h computes
// them), with the outputs each returns.
#include <optional>
#include <utility>

#include "engines/attention.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

AttentionRequest request(AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
                         AtenTensorHandle* attn_bias, int32_t is_causal, double* scale, double dropout_p) {
  return AttentionRequest{tensor_of(query), tensor_of(key), tensor_of(value),
                          attn_bias && *attn_bias ? tensor_of(*attn_bias) : nullptr, is_causal != 0,
                          scale ? std::optional<double>(*scale) : std::nullopt, dropout_p};
}

}  // namespace

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  const char* function = "aoti_torch_cuda__scaled_dot_product_efficient_attention";
  PTB_NEED(query, function);
  PTB_NEED(key, function);
  PTB_NEED(value, function);
  auto done = efficient_attention(request(query, key, value, attn_bias, is_causal, scale, dropout_p),
                                  compute_log_sumexp != 0);
  if (!done.ok()) return fail(function, done.error().message);
  if (hand_to_library(function, std::move(done->out), ret0) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->lse), ret1) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->seed), ret2) != kShimSuccess) return kShimFailure;
  return hand_to_library(function, std::move(done->offset), ret3);
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  const char* function = "aoti_torch_cuda__scaled_dot_product_flash_attention";
  PTB_NEED(query, function);
  PTB_NEED(key, function);
  PTB_NEED(value, function);
  if (return_debug_mask) return fail(function, "the debug attention mask is for training; it is not made here");
  auto done = flash_attention(request(query, key, value, nullptr, is_causal, scale, dropout_p));
  if (!done.ok()) return fail(function, done.error().message);
  if (ret2) *ret2 = nullptr;  // cumulative sequence lengths: none for dense batches
  if (ret3) *ret3 = nullptr;
  if (ret4) *ret4 = done->lq;
  if (ret5) *ret5 = done->lk;
  if (hand_to_library(function, std::move(done->out), ret0) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->lse), ret1) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->seed), ret6) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->offset), ret7) != kShimSuccess) return kShimFailure;
  return hand_to_library(function, std::move(*done->debug), ret8);
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  const char* function = "aoti_torch_cuda__scaled_dot_product_cudnn_attention";
  PTB_NEED(query, function);
  PTB_NEED(key, function);
  PTB_NEED(value, function);
  if (return_debug_mask) return fail(function, "the debug attention mask is for training; it is not made here");
  auto done = cudnn_attention(request(query, key, value, attn_bias, is_causal, scale, dropout_p),
                              compute_log_sumexp != 0);
  if (!done.ok()) return fail(function, done.error().message);
  if (ret2) *ret2 = nullptr;
  if (ret3) *ret3 = nullptr;
  if (ret4) *ret4 = done->lq;
  if (ret5) *ret5 = done->lk;
  if (ret8) *ret8 = nullptr;
  if (hand_to_library(function, std::move(done->out), ret0) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->lse), ret1) != kShimSuccess) return kShimFailure;
  if (hand_to_library(function, std::move(done->seed), ret6) != kShimSuccess) return kShimFailure;
  return hand_to_library(function, std::move(done->offset), ret7);
}
