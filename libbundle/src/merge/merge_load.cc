// Opening one merge input: its program, its data file, and the CUDA payload
// of every CudaBackend delegate, which must be the multi-variant form with a
// target (an untargeted export cannot say which GPU its library is for).
#include "merge/merge_internal.h"

namespace ptb::merge_detail {

std::optional<Blob> Export::find_blob(std::string_view key) const {
  if (const PteNamedData* entry = pte.find_named_data(key)) return Blob{pte.named_data_bytes(*entry), &pte.file()};
  if (ptd) {
    if (const PtdEntry* entry = ptd->find(key)) return Blob{ptd->bytes(*entry), &ptd->file()};
  }
  return std::nullopt;
}

std::string Export::blob_file(std::string_view key) const {
  if (pte.find_named_data(key) || !ptd) return pte.name();
  return ptd->path();
}

Result<Export> load_export(const MergeSource& source, bool fallback_option, bool multi_variant_only) {
  Export out;
  out.source = source;
  out.fallback_option = fallback_option;
  PTB_TRY(out.pte, PteFile::open(source.pte_path));
  if (!source.ptd_path.empty()) {
    PTB_TRY(auto ptd, PtdFile::open(source.ptd_path));
    out.ptd = std::make_unique<PtdFile>(std::move(ptd));
  }

  const auto* plans = out.pte.program().execution_plan();
  for (size_t plan = 0; plans && plan < plans->size(); ++plan) {
    const auto* execution_plan = plans->Get(static_cast<flatbuffers::uoffset_t>(plan));
    const auto* delegates = execution_plan->delegates();
    std::string method = execution_plan->name() ? execution_plan->name()->str() : std::string();
    for (size_t index = 0; delegates && index < delegates->size(); ++index) {
      const auto* delegate = delegates->Get(static_cast<flatbuffers::uoffset_t>(index));
      if (!delegate->id() || delegate->id()->string_view() != kCudaBackendId) continue;
      CudaDelegate cuda;
      cuda.plan = plan;
      cuda.index = index;
      cuda.method = method;
      std::string where = source.pte_path + ": method '" + method + "' delegate " + std::to_string(index);
      PTB_TRY(cuda.payload, decode_cuda_payload(out.pte.delegate_payload(plan, index), method, where));
      if (cuda.payload.form != CudaPayloadForm::MultiVariant && !multi_variant_only) {
        out.library_keys.insert(cuda.payload.so_key);
        out.weight_keys.insert(cuda.payload.weights_key);
        out.cuda.push_back(std::move(cuda));
        continue;
      }
      if (cuda.payload.form != CudaPayloadForm::MultiVariant) {
        return invalid(where + ": CUDA payload is the " + std::string(cuda_payload_form_name(cuda.payload.form)) +
                       " form, which records no GPU target; expected the ETCUDAFQN0 multi-variant form "
                       "(merge whole bundles with `ptbundle merge -o DIR BUNDLE...` to use older layouts)");
      }
      for (const CudaVariant& variant : cuda.payload.variants) {
        if (variant.target_sm == 0) {
          return invalid(where + ": CUDA variant '" + variant.so_key +
                         "' has no target SM (an untargeted export); expected exports made for one GPU "
                         "target each, which merge can tell apart");
        }
        out.library_keys.insert(variant.so_key);
      }
      for (const CudaWeight& weight : cuda.payload.weights) out.weight_keys.insert(weight.storage_key);
      out.cuda.push_back(std::move(cuda));
    }
  }
  if (out.cuda.empty()) {
    return invalid(source.pte_path + ": no CudaBackend delegate; expected a program exported with ExecuTorch's CUDA backend");
  }
  return out;
}

}  // namespace ptb::merge_detail
