// Which variants a merged delegate carries. As in ExecuTorch's merge: every
// regular input contributes its native variants with any PTX capability
// dropped (PTX inside a native variant is that build's business; the one
// runtime fallback is declared separately); a target given twice is refused;
// at most one fallback, either inherited from an input that already has one
// or taken from --fallback, whose export must hold exactly one PTX-capable
// variant; natives sorted by SM, the fallback last.
//
// Beyond ExecuTorch, unless the caller turns it off: a regular input whose
// library holds PTX but no cubin is refused, because labelling it a native
// variant would send the runtime to a cubin that does not exist; it belongs
// behind --fallback.
#include <algorithm>
#include <map>

#include "merge/merge_internal.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {
namespace {

std::string sm_list(const std::vector<uint32_t>& sms, const char* prefix) {
  std::string out;
  for (uint32_t sm : sms) out += (out.empty() ? "" : ", ") + std::string(prefix) + std::to_string(sm);
  return out;
}

std::string input_spelling(const Export& e) {
  return e.source.ptd_path.empty() ? e.source.pte_path : e.source.pte_path + "," + e.source.ptd_path;
}

// Libraries are named data of the .pte (ExecuTorch's merge reads them there).
Result<LibrarySource> library_of(const Export& e, const CudaDelegate& delegate, const CudaVariant& variant) {
  const PteNamedData* entry = e.pte().find_named_data(variant.so_key);
  if (!entry) {
    return invalid(e.name() + ": " + delegate.identity() + ": the library '" + variant.so_key + "' of the sm" +
                   std::to_string(variant.target_sm) + " variant is not in the program's named data; expected the export's .pte to hold it");
  }
  return LibrarySource{variant.so_key, Blob{e.pte().named_data_bytes(*entry), &e.pte().file()}, &e};
}

Status check_native_library(const Export& e, const CudaDelegate& delegate, const CudaVariant& variant,
                            const LibrarySource& library, LibraryScanCache& scans) {
  if (!scans.enabled()) return {};
  std::string name = e.name() + ": named data '" + library.key + "'";
  PTB_TRY(const LibraryKernels* kernels, scans.get(library.key, library.blob.bytes, name, &library.source->pte()));
  if (kernels->cubin_sms.empty() && !kernels->ptx_sms.empty()) {
    return invalid(e.name() + ": " + delegate.identity() + ": the library of the sm" + std::to_string(variant.target_sm) +
                   " variant holds only PTX (" + sm_list(kernels->ptx_sms, "compute_") +
                   ") and no cubin, so it is not a native variant; pass this export as the fallback: --fallback " +
                   input_spelling(e));
  }
  return {};
}

Status check_fallback_library(const Export& e, const CudaDelegate& delegate, const CudaVariant& variant,
                              const LibrarySource& library, LibraryScanCache& scans) {
  if (!scans.enabled()) return {};
  std::string name = e.name() + ": named data '" + library.key + "'";
  PTB_TRY(const LibraryKernels* kernels, scans.get(library.key, library.blob.bytes, name, &library.source->pte()));
  if (kernels->ptx_sms.empty() && !kernels->cubin_sms.empty()) {
    return invalid(e.name() + ": " + delegate.identity() + ": the fallback variant says it carries PTX for compute_" +
                   std::to_string(variant.ptx_compute) + ", but its library holds only cubins (" +
                   sm_list(kernels->cubin_sms, "sm_") + "); expected an export made with cuda_include_ptx=ON");
  }
  return {};
}

VariantOrigin origin_of(const CudaDelegate& delegate, const CudaVariant& variant, const LibrarySource& library,
                        VariantKind kind) {
  VariantOrigin origin;
  origin.method = delegate.method;
  origin.delegate_index = static_cast<uint32_t>(delegate.index);
  origin.kind = kind;
  origin.target_sm = variant.target_sm;
  origin.ptx_compute = variant.ptx_compute;
  origin.so_key = variant.so_key;
  origin.so_size = library.blob.bytes.size();
  origin.source_pte = library.source->name();
  origin.from_fallback_option = library.source->fallback_option;
  return origin;
}

struct Chosen {
  CudaVariant variant;
  LibrarySource library;
  VariantOrigin origin;
};

// The fallback from --fallback: exactly one PTX-capable variant.
Result<Chosen> fallback_from_option(const Export& reference, const Export& fallback, size_t position,
                                    WeightCheck& weights, LibraryScanCache& scans) {
  const CudaDelegate& delegate = fallback.cuda[position];
  PTB_CHECK(weights.add(reference.cuda[position], fallback, delegate));
  std::vector<const CudaVariant*> capable;
  for (const CudaVariant& variant : delegate.payload->variants) {
    if (variant.ptx_compute != 0) capable.push_back(&variant);
  }
  if (capable.size() != 1) {
    return invalid(fallback.name() + " (--fallback): " + delegate.identity() + ": " + std::to_string(capable.size()) +
                   " PTX-capable variants; expected exactly one (an export made with cuda_include_ptx=ON)");
  }
  CudaVariant variant = *capable.front();
  variant.fallback_only = true;
  PTB_TRY(LibrarySource library, library_of(fallback, delegate, variant));
  PTB_CHECK(check_fallback_library(fallback, delegate, variant, library, scans));
  return Chosen{variant, library, origin_of(delegate, variant, library, VariantKind::PtxFallback)};
}

}  // namespace

Result<const LibraryKernels*> LibraryScanCache::get(const std::string& key, Bytes library, const std::string& name,
                                                    const PteFile* program) {
  // A library's key names its bytes, not its kernel files': two programs
  // may hold the same library beside kernel files for different GPUs, so
  // the scan is cached under the key only for a library without any.
  std::vector<KernelFile> files;
  if (program) {
    PTB_TRY(files, kernel_files_of(*program, key));
  }
  std::string cache_key = key;
  if (!files.empty()) cache_key += "\n" + std::to_string(reinterpret_cast<uintptr_t>(program));
  auto found = cache_.find(cache_key);
  if (found != cache_.end()) return &found->second;
  PTB_TRY(auto images, scan_kernels(library, name));
  if (program) {
    for (const KernelFile& file : files) {
      PTB_TRY(auto more, scan_kernels(program->named_data_bytes(*file.entry), name + ": kernel file " + in_quotes(file.name)));
      images.insert(images.end(), more.begin(), more.end());
    }
  }
  LibraryKernels kernels;
  for (const KernelImage& image : images) {
    auto& sms = image.kind == KernelKind::Cubin ? kernels.cubin_sms : kernels.ptx_sms;
    if (std::find(sms.begin(), sms.end(), image.sm) == sms.end()) sms.push_back(image.sm);
  }
  std::sort(kernels.cubin_sms.begin(), kernels.cubin_sms.end());
  std::sort(kernels.ptx_sms.begin(), kernels.ptx_sms.end());
  return &cache_.emplace(cache_key, std::move(kernels)).first->second;
}

Result<DelegateVariants> select_variants(const std::vector<Export>& regular, const Export* fallback,
                                         size_t position, WeightCheck& weights, LibraryScanCache& scans) {
  const Export& reference = regular.front();
  std::vector<Chosen> natives;
  std::map<uint32_t, const Export*> target_owner;
  std::optional<Chosen> inherited;

  for (const Export& e : regular) {
    const CudaDelegate& delegate = e.cuda[position];
    PTB_CHECK(weights.add(reference.cuda[position], e, delegate));
    for (const CudaVariant& declared : delegate.payload->variants) {
      if (declared.fallback_only) {
        if (inherited) {
          return invalid(inherited->library.source->name() + " and " + e.name() + " both carry a fallback variant for " +
                         delegate.identity() + "; expected at most one PTX fallback");
        }
        PTB_TRY(LibrarySource library, library_of(e, delegate, declared));
        PTB_CHECK(check_fallback_library(e, delegate, declared, library, scans));
        inherited = Chosen{declared, library, origin_of(delegate, declared, library, VariantKind::PtxFallback)};
        continue;
      }
      auto [owner, fresh] = target_owner.emplace(declared.target_sm, &e);
      if (!fresh) {
        return invalid(owner->second->name() + " and " + e.name() + " both hold a variant for sm" +
                       std::to_string(declared.target_sm) + " (" + delegate.identity() + "); expected each GPU target once");
      }
      CudaVariant variant = declared;
      variant.ptx_compute = 0;
      PTB_TRY(LibrarySource library, library_of(e, delegate, variant));
      PTB_CHECK(check_native_library(e, delegate, variant, library, scans));
      natives.push_back({variant, library, origin_of(delegate, variant, library, VariantKind::Cubin)});
    }
  }
  std::stable_sort(natives.begin(), natives.end(),
                   [](const Chosen& a, const Chosen& b) { return a.variant.target_sm < b.variant.target_sm; });

  std::optional<Chosen> chosen_fallback = inherited;
  if (inherited && fallback) {
    return invalid(inherited->library.source->name() + " already carries a fallback variant for " +
                   reference.cuda[position].identity() + ", so --fallback " + fallback->name() +
                   " cannot add another; expected at most one PTX fallback");
  }
  if (fallback) {
    PTB_TRY(Chosen chosen, fallback_from_option(reference, *fallback, position, weights, scans));
    chosen_fallback = std::move(chosen);
  }
  if (chosen_fallback) natives.push_back(std::move(*chosen_fallback));

  DelegateVariants out;
  for (Chosen& chosen : natives) {
    out.variants.push_back(chosen.variant);
    out.origins.push_back(std::move(chosen.origin));
    out.libraries.push_back(std::move(chosen.library));
  }
  return out;
}

}  // namespace ptb::detail
