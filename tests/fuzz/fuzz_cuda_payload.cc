// libFuzzer target: decode_cuda_payload; whatever decodes must re-encode to
// the same bytes (the format has one encoding per payload).
#include <cstdlib>
#include <cstring>

#include "ptbundle/formats/cuda_payload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto decoded = ptb::decode_cuda_payload(ptb::Bytes(data, size), "forward", "fuzz");
  if (!decoded.ok()) return 0;
  if (decoded->form == ptb::CudaPayloadForm::MethodKeyed) return 0;
  auto encoded = ptb::encode_cuda_payload(*decoded);
  if (encoded.size() != size || std::memcmp(encoded.data(), data, size) != 0) std::abort();
  return 0;
}
