// Opening one merge input: its program, its data file, and the CUDA payload
// of every CudaBackend delegate, which must be the multi-variant form with a
// target (an untargeted export cannot say which GPU its library is for).
#include "merge/merge_internal.h"
#include "ptbundle/formats/kernel_files.h"

namespace ptb::detail {

std::optional<Blob> Export::find_blob(std::string_view key) const {
  auto found = program->find(key);
  if (!found) return std::nullopt;
  return Blob{found->bytes, found->in_data_file ? &ptd()->file() : &pte().file()};
}

std::string Export::blob_file(std::string_view key) const {
  auto found = program->find(key);
  return found ? found->file : pte().name();
}

Result<Export> load_export(const MergeSource& source, bool fallback_option, bool multi_variant_only) {
  // The data file as given, never looked for (merge.h says why).
  PTB_TRY(PteFile pte, PteFile::open(source.pte_path));
  std::shared_ptr<const PtdFile> ptd;
  if (!source.ptd_path.empty()) {
    PTB_TRY(PtdFile opened, PtdFile::open(source.ptd_path));
    ptd = std::make_shared<const PtdFile>(std::move(opened));
  }
  auto program = std::make_shared<const ProgramWithData>(std::make_shared<const PteFile>(std::move(pte)), std::move(ptd));
  return export_of(source, std::move(program), fallback_option, multi_variant_only);
}

Result<Export> export_of(const MergeSource& source, std::shared_ptr<const ProgramWithData> program, bool fallback_option,
                         bool multi_variant_only) {
  Export out;
  out.source = source;
  out.fallback_option = fallback_option;
  out.program = std::move(program);

  for (const CudaDelegate& cuda : out.program->cuda_delegates()) {
    PTB_TRY(const CudaPayload* payload, cuda.decoded());
    if (payload->form != CudaPayloadForm::MultiVariant && !multi_variant_only) {
      out.library_keys.insert(payload->so_key);
      out.weight_keys.insert(payload->weights_key);
      out.cuda.push_back(cuda);
      continue;
    }
    if (payload->form != CudaPayloadForm::MultiVariant) {
      return invalid(cuda.where + ": CUDA payload is the " + std::string(cuda_payload_form_name(payload->form)) +
                     " form, which records no GPU target; expected the ETCUDAFQN0 multi-variant form "
                     "(merge whole bundles with `ptbundle merge -o DIR BUNDLE...` to use older layouts)");
    }
    for (const CudaVariant& variant : payload->variants) {
      if (variant.target_sm == 0) {
        return invalid(cuda.where + ": CUDA variant '" + variant.so_key +
                       "' has no target SM (an untargeted export); expected exports made for one GPU "
                       "target each, which merge can tell apart");
      }
      // Each variant's library is copied into the merged program by its
      // key; kernel files beside it (kernel_files.h) are not.
      PTB_TRY(const std::vector<KernelFile> kernel_files, kernel_files_of(out.program->pte(), variant.so_key));
      if (!kernel_files.empty()) {
        return invalid(cuda.where + ": CUDA variant '" + variant.so_key + "' loads " +
                       std::to_string(kernel_files.size()) +
                       " kernel files beside its library, which a merged variant list does not carry; expected "
                       "kernels embedded in the library (merge whole bundles with `ptbundle merge -o DIR BUNDLE...` "
                       "to keep one program per GPU target)");
      }
      out.library_keys.insert(variant.so_key);
    }
    for (const CudaWeight& weight : payload->weights) out.weight_keys.insert(weight.storage_key);
    out.cuda.push_back(cuda);
  }
  if (out.cuda.empty()) {
    return invalid(source.pte_path + ": no CudaBackend delegate; expected a program exported with ExecuTorch's CUDA backend");
  }
  return out;
}

}  // namespace ptb::detail
