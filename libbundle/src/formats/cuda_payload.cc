// The CudaBackend delegate payload. The multi-variant form is a little-endian
// record stream:
//   "ETCUDAFQN0"  u32 variant_count
//   variant:  u32 target_sm  u32 ptx_compute  u32 flags (bit 0: fallback only)  str so_key
//   u32 weight_count
//   weight:   str fqn  str storage_key  u64 storage_nbytes  i32 dtype  i32 device_type
//             i64 storage_offset  u32 ndim  i64 sizes[ndim]  i64 strides[ndim]
//   str = u32 byte length + UTF-8 bytes; nothing may follow the last weight.
// The limits and consistency rules are ExecuTorch's, so that what we accept
// its runtime accepts too.
#include "ptbundle/formats/cuda_payload.h"

#include "ptbundle/base/dtype.h"
#include "ptbundle/base/text.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>

#include "formats/wire.h"

namespace ptb {
namespace {

constexpr std::string_view kMagic = "ETCUDAFQN0";
constexpr uint32_t kMaxVariants = 256;
constexpr uint32_t kMaxWeights = 1u << 20;
constexpr uint32_t kMaxDims = 64;


// Reads fields in order and fails, naming the byte offset, on any field that
// runs past the end.
class PayloadReader {
 public:
  PayloadReader(Bytes data, const std::string& context) : data_(data), context_(context) {}

  size_t offset() const { return offset_; }
  void skip(size_t count) { offset_ += std::min(count, data_.size() - offset_); }
  bool at_end() const { return offset_ == data_.size(); }

  Error error(const std::string& what) const {
    return invalid(context_ + ": CUDA payload at byte " + std::to_string(offset_) + ": " + what);
  }

  Result<uint32_t> u32(const char* field) {
    PTB_CHECK(need(4, field));
    uint32_t value = detail::u32le(data_, offset_);
    offset_ += 4;
    return value;
  }

  Result<uint64_t> u64(const char* field) {
    PTB_CHECK(need(8, field));
    uint64_t value = detail::u64le(data_, offset_);
    offset_ += 8;
    return value;
  }

  Result<std::string> str(const char* field) {
    PTB_TRY(uint32_t length, u32(field));
    PTB_CHECK(need(length, field));
    Bytes bytes = data_.subspan(offset_, length);
    if (!is_utf8(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()))) return error(std::string(field) + " is not valid UTF-8");
    offset_ += length;
    return std::string(bytes.begin(), bytes.end());
  }

 private:
  Status need(uint64_t size, const char* field) const {
    if (data_.size() - offset_ < size) {
      return error(std::string(field) + " needs " + std::to_string(size) + " bytes but only " + std::to_string(data_.size() - offset_) +
                   " remain; the payload is truncated");
    }
    return {};
  }

  Bytes data_;
  size_t offset_ = 0;
  const std::string& context_;
};

Status check_variants(const std::vector<CudaVariant>& variants, const std::string& context) {
  auto fail = [&](const std::string& what) { return invalid(context + ": CUDA payload variants: " + what); };
  bool has_fallback = false;
  size_t fallbacks = 0;
  for (const auto& variant : variants) {
    if (variant.fallback_only) ++fallbacks, has_fallback = true;
  }
  for (const auto& variant : variants) {
    if (variant.target_sm != 0) continue;
    // An untargeted library is only meaningful alone.
    if (variants.size() != 1 || variant.ptx_compute != 0 || has_fallback) {
      return fail("a variant with target_sm 0 must be the only one, without PTX and not a fallback");
    }
    if (variant.so_key.empty()) return fail("variant has an empty library key");
    return {};
  }
  if (fallbacks > 1) return fail(std::to_string(fallbacks) + " fallback variants; expected at most one");
  std::set<uint32_t> native_sms;
  for (const auto& variant : variants) {
    std::string which = "variant sm_" + std::to_string(variant.target_sm);
    if (variant.ptx_compute > variant.target_sm) {
      return fail(which + " has PTX for compute_" + std::to_string(variant.ptx_compute) + "; expected PTX no newer than its target");
    }
    if (variant.so_key.empty()) return fail(which + " has an empty library key");
    if (variant.fallback_only) {
      if (variant.ptx_compute == 0) return fail(which + " is the fallback but carries no PTX; expected ptx_compute > 0");
      continue;
    }
    if (variants.size() > 1 && variant.ptx_compute != 0) {
      return fail(which + " carries PTX (compute_" + std::to_string(variant.ptx_compute) +
                  ") beside other variants; expected PTX only in the one fallback variant");
    }
    if (!native_sms.insert(variant.target_sm).second) return fail(which + " appears twice; expected one library per SM");
  }
  return {};
}

Result<CudaWeight> read_weight(PayloadReader& reader) {
  CudaWeight weight;
  PTB_TRY(weight.fqn, reader.str("weight fqn"));
  PTB_TRY(weight.storage_key, reader.str("weight storage_key"));
  PTB_TRY(weight.storage_nbytes, reader.u64("weight storage_nbytes"));
  PTB_TRY(uint32_t dtype, reader.u32("weight dtype"));
  PTB_TRY(uint32_t device, reader.u32("weight device_type"));
  PTB_TRY(uint64_t storage_offset, reader.u64("weight storage_offset"));
  PTB_TRY(uint32_t ndim, reader.u32("weight ndim"));
  weight.dtype = static_cast<int32_t>(dtype);
  weight.device_type = static_cast<int32_t>(device);
  weight.storage_offset = static_cast<int64_t>(storage_offset);
  std::string which = "weight '" + detail::show_text(weight.fqn) + "'";
  if (weight.fqn.empty() || weight.storage_key.empty()) return reader.error("a weight has an empty fqn or storage key");
  if (ndim > kMaxDims) return reader.error(which + " has " + std::to_string(ndim) + " dimensions; expected at most 64");
  for (uint32_t i = 0; i < ndim; ++i) {
    PTB_TRY(uint64_t size, reader.u64("weight sizes"));
    weight.sizes.push_back(static_cast<int64_t>(size));
  }
  for (uint32_t i = 0; i < ndim; ++i) {
    PTB_TRY(uint64_t stride, reader.u64("weight strides"));
    weight.strides.push_back(static_cast<int64_t>(stride));
  }
  bool negative = weight.storage_offset < 0;
  for (int64_t v : weight.sizes) negative = negative || v < 0;
  for (int64_t v : weight.strides) negative = negative || v < 0;
  if (negative) return reader.error(which + " has a negative offset, size or stride; expected none");
  return weight;
}

Result<CudaPayload> decode_multi_variant(Bytes payload, const std::string& context) {
  PayloadReader reader(payload, context);
  reader.skip(kMagic.size());
  CudaPayload out;
  out.form = CudaPayloadForm::MultiVariant;
  PTB_TRY(uint32_t variant_count, reader.u32("variant count"));
  if (variant_count == 0 || variant_count > kMaxVariants) {
    return reader.error("variant count " + std::to_string(variant_count) + " is out of range; expected 1 to 256");
  }
  for (uint32_t i = 0; i < variant_count; ++i) {
    CudaVariant variant;
    PTB_TRY(variant.target_sm, reader.u32("variant target_sm"));
    PTB_TRY(variant.ptx_compute, reader.u32("variant ptx_compute"));
    PTB_TRY(uint32_t flags, reader.u32("variant flags"));
    if (flags & ~1u) return reader.error("variant flags " + std::to_string(flags) + " set unknown bits; expected 0 or 1");
    variant.fallback_only = (flags & 1u) != 0;
    PTB_TRY(variant.so_key, reader.str("variant library key"));
    out.variants.push_back(std::move(variant));
  }
  PTB_CHECK(check_variants(out.variants, context));
  PTB_TRY(uint32_t weight_count, reader.u32("weight count"));
  if (weight_count > kMaxWeights) {
    return reader.error("weight count " + std::to_string(weight_count) + " is too large; expected at most 1048576");
  }
  for (uint32_t i = 0; i < weight_count; ++i) {
    PTB_TRY(auto weight, read_weight(reader));
    out.weights.push_back(std::move(weight));
  }
  if (!reader.at_end()) {
    return reader.error(std::to_string(payload.size() - reader.offset()) +
                        " bytes follow the last weight; expected the payload to end there");
  }
  return out;
}

Result<CudaPayload> decode_single_blob(Bytes payload, const std::string& context) {
  std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
  size_t newline = text.find('\n');
  auto printable = [](std::string_view part) {
    for (char c : part) {
      if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) return false;
    }
    return !part.empty();
  };
  if (newline == std::string_view::npos || !printable(text.substr(0, newline)) || !printable(text.substr(newline + 1))) {
    return invalid(context + ": CUDA payload of " + std::to_string(payload.size()) + " bytes starting '" +
                   detail::show_bytes(payload.first(std::min<size_t>(payload.size(), 16))) +
                   "' is not a known form; expected empty, '<so_key>\\n<weights_key>' or 'ETCUDAFQN0'");
  }
  CudaPayload out;
  out.form = CudaPayloadForm::SingleBlob;
  out.so_key = std::string(text.substr(0, newline));
  out.weights_key = std::string(text.substr(newline + 1));
  return out;
}

void put_u32(std::vector<uint8_t>& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void put_u64(std::vector<uint8_t>& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void put_str(std::vector<uint8_t>& out, const std::string& text) {
  put_u32(out, static_cast<uint32_t>(text.size()));
  out.insert(out.end(), text.begin(), text.end());
}

}  // namespace

const char* cuda_payload_form_name(CudaPayloadForm form) {
  switch (form) {
    case CudaPayloadForm::MethodKeyed:
      return "method_keyed";
    case CudaPayloadForm::SingleBlob:
      return "single_blob";
    case CudaPayloadForm::MultiVariant:
      return "multi_variant";
  }
  return "unknown";
}

Result<CudaPayload> decode_cuda_payload(Bytes payload, const std::string& method_name, const std::string& context) {
  if (payload.empty()) {
    CudaPayload out;
    out.form = CudaPayloadForm::MethodKeyed;
    out.so_key = method_name + "_so_blob";
    out.weights_key = method_name + "_weights_blob";
    return out;
  }
  if (detail::has_text_at(payload, 0, kMagic)) return decode_multi_variant(payload, context);
  return decode_single_blob(payload, context);
}

std::vector<uint8_t> encode_cuda_payload(const CudaPayload& payload) {
  std::vector<uint8_t> out;
  switch (payload.form) {
    case CudaPayloadForm::MethodKeyed:
      return out;
    case CudaPayloadForm::SingleBlob:
      out.assign(payload.so_key.begin(), payload.so_key.end());
      out.push_back('\n');
      out.insert(out.end(), payload.weights_key.begin(), payload.weights_key.end());
      return out;
    case CudaPayloadForm::MultiVariant:
      break;
  }
  out.assign(kMagic.begin(), kMagic.end());
  put_u32(out, static_cast<uint32_t>(payload.variants.size()));
  for (const auto& variant : payload.variants) {
    put_u32(out, variant.target_sm);
    put_u32(out, variant.ptx_compute);
    put_u32(out, variant.fallback_only ? 1u : 0u);
    put_str(out, variant.so_key);
  }
  put_u32(out, static_cast<uint32_t>(payload.weights.size()));
  for (const auto& weight : payload.weights) {
    put_str(out, weight.fqn);
    put_str(out, weight.storage_key);
    put_u64(out, weight.storage_nbytes);
    put_u32(out, static_cast<uint32_t>(weight.dtype));
    put_u32(out, static_cast<uint32_t>(weight.device_type));
    put_u64(out, static_cast<uint64_t>(weight.storage_offset));
    put_u32(out, static_cast<uint32_t>(weight.sizes.size()));
    for (int64_t size : weight.sizes) put_u64(out, static_cast<uint64_t>(size));
    for (int64_t stride : weight.strides) put_u64(out, static_cast<uint64_t>(stride));
  }
  return out;
}

std::vector<VariantTarget> variant_targets(const std::vector<CudaVariant>& variants) {
  std::vector<VariantTarget> targets;
  for (const CudaVariant& variant : variants)
    targets.push_back({variant.target_sm, variant.ptx_compute, variant.fallback_only});
  return targets;
}

// As ExecuTorch's CudaWeightCache reaches a weight before binding it: the
// last element's offset plus one, in elements, then in bytes.
Result<uint64_t> weight_view_bytes(const CudaWeight& weight) {
  auto item = weight.dtype >= 0 && weight.dtype <= std::numeric_limits<int8_t>::max()
                  ? scalar_type_size(static_cast<int8_t>(weight.dtype))
                  : std::nullopt;
  if (!item) {
    return invalid("dtype " + std::to_string(weight.dtype) + " has no element size; expected an ExecuTorch ScalarType");
  }
  if (weight.sizes.size() != weight.strides.size()) {
    return invalid(std::to_string(weight.sizes.size()) + " sizes but " + std::to_string(weight.strides.size()) +
                   " strides; expected one stride per size");
  }
  if (weight.storage_offset < 0) {
    return invalid("storage_offset " + std::to_string(weight.storage_offset) + " is negative; expected >= 0");
  }
  uint64_t last = static_cast<uint64_t>(weight.storage_offset);
  for (size_t dim = 0; dim < weight.sizes.size(); ++dim) {
    if (weight.sizes[dim] < 0 || weight.strides[dim] < 0) {
      return invalid("dimension " + std::to_string(dim) + " has size " + std::to_string(weight.sizes[dim]) +
                     " and stride " + std::to_string(weight.strides[dim]) + "; expected both >= 0");
    }
    if (weight.sizes[dim] == 0) return uint64_t{0};  // an empty view reaches no byte
    uint64_t span = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(weight.sizes[dim] - 1), static_cast<uint64_t>(weight.strides[dim]),
                               &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return invalid("sizes and strides overflow 64 bits");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_add_overflow(last, 1, &bytes) || __builtin_mul_overflow(bytes, *item, &bytes)) {
    return invalid("sizes and strides overflow 64 bits");
  }
  return bytes;
}

std::vector<PayloadKey> payload_keys(const CudaPayload& payload) {
  std::vector<PayloadKey> keys;
  if (payload.form != CudaPayloadForm::MultiVariant) {
    keys.push_back({payload.so_key, "the library", true, {}});
    if (!payload.weights_key.empty()) keys.push_back({payload.weights_key, "the weights blob", false, {}});
    return keys;
  }
  for (size_t v = 0; v < payload.variants.size(); ++v) {
    const CudaVariant& variant = payload.variants[v];
    std::string target = variant.target_sm ? "sm_" + std::to_string(variant.target_sm) : "no recorded target";
    if (variant.ptx_compute) target += " + compute_" + std::to_string(variant.ptx_compute) + " PTX";
    keys.push_back({variant.so_key, "the library of variant " + std::to_string(v) + " (" + target + ")", true, {}});
  }
  for (const CudaWeight& weight : payload.weights)
    keys.push_back({weight.storage_key, "the storage of weight " + in_quotes(weight.fqn), false, weight.storage_nbytes});
  return keys;
}

}  // namespace ptb
