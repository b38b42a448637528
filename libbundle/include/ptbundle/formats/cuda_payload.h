// The processed bytes of ExecuTorch's CudaBackend delegate, in the three forms
// ExecuTorch has written:
//   - empty: the library and weights are named data keyed
//     "<method>_so_blob" and "<method>_weights_blob";
//   - "<so_key>\n<weights_key>": keys "<sha256>_so_blob" / "<sha256>_weights_blob";
//   - "ETCUDAFQN0": several library variants (target SM, PTX target, fallback
//     flag) and per-FQN weight entries, each its own named-data key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/kernels/compat.h"

namespace ptb {

enum class CudaPayloadForm { MethodKeyed, SingleBlob, MultiVariant };
const char* cuda_payload_form_name(CudaPayloadForm form);  // "method_keyed", "single_blob", "multi_variant"

struct CudaVariant {
  uint32_t target_sm = 0;    // 80 for sm_80
  uint32_t ptx_compute = 0;  // 0: no PTX; 75 for compute_75
  bool fallback_only = false;
  std::string so_key;
  // As merge's report lists a variant (schemas/merge.schema.json).
  template <class F>
  void fields(F& f) const {
    f("target_sm", target_sm)("ptx_compute", ptx_compute)("fallback_only", fallback_only);
  }
};

struct CudaWeight {
  std::string fqn;
  std::string storage_key;
  uint64_t storage_nbytes = 0;
  int32_t dtype = 0;        // ExecuTorch ScalarType number
  int32_t device_type = 0;  // 1 = CUDA
  int64_t storage_offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct CudaPayload {
  CudaPayloadForm form = CudaPayloadForm::MethodKeyed;
  // MethodKeyed and SingleBlob: one library and one weights blob.
  std::string so_key;
  std::string weights_key;
  // MultiVariant.
  std::vector<CudaVariant> variants;
  std::vector<CudaWeight> weights;
};

// `method_name` resolves the MethodKeyed form; `context` prefixes errors
// ("model.pte: forward delegate 0").
Result<CudaPayload> decode_cuda_payload(Bytes payload, const std::string& method_name,
                                        const std::string& context);
// The bytes of `payload` in its form, as ExecuTorch writes them (the fixtures'
// payloads re-encode byte for byte). The multi-variant form stores one ndim
// per weight, so each weight's sizes and strides must be equally long.
std::vector<uint8_t> encode_cuda_payload(const CudaPayload& payload);

// The bytes a per-FQN weight view reaches (storage_offset + the extent of
// sizes and strides, times the element size), as ExecuTorch's
// CudaWeightCache checks before it binds the weight; or why the entry is
// malformed (unknown dtype, negative sizes, overflow). Verify and run use it.
Result<uint64_t> weight_view_bytes(const CudaWeight& weight);

// The variants reduced to what ExecuTorch's runtime chooses by (choose_variant).
std::vector<VariantTarget> variant_targets(const std::vector<CudaVariant>& variants);

// A named-data key a payload reads, and what reads it: the one list that
// export (to copy the keys), verify (to check them) and run (to bind them)
// agree on.
struct PayloadKey {
  std::string key;
  std::string what;     // "the library of variant 0 (sm_80)", "the storage of weight 'fc.bias'"
  bool library = false;  // a shared object: must be an ELF file
  std::optional<uint64_t> exact_size;  // a weight's storage_nbytes
};
// Libraries first, then weights. A single-blob payload with an empty weights
// key names no blob (ExecuTorch then loads none), so it needs no key for it.
std::vector<PayloadKey> payload_keys(const CudaPayload& payload);

}  // namespace ptb
