// `merge_programs`: load, check everything, then write. The order of checks
// follows ExecuTorch's merge (program equivalence of every input against the
// first, then per delegate the weights and the variants), except that weight
// bytes are compared in one batch after the cheap checks, so that a refusal
// for a duplicate target does not wait for gigabytes to be read.
#include <algorithm>
#include <filesystem>

#include "merge/merge_internal.h"
#include "merge/merge_pair.h"
#include "ptbundle/program/program_argument.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/signing/sign_bundle.h"

namespace ptb {

const char* variant_kind_name(VariantKind kind) {
  return kind == VariantKind::Cubin ? "cubin" : "ptx-fallback";
}

Result<MergeSource> parse_merge_source(std::string_view argument) {
  PTB_TRY(ProgramArgument parsed, parse_program_argument(argument));
  return MergeSource{parsed.program, parsed.data.value_or("")};
}

std::string VariantOrigin::delegate() const { return method + "[" + std::to_string(delegate_index) + "]"; }

std::string VariantOrigin::target() const {
  if (kind == VariantKind::Cubin) return "sm" + std::to_string(target_sm);
  return "compute_" + std::to_string(ptx_compute) + " (source sm" + std::to_string(target_sm) + ")";
}

namespace detail {
namespace {

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
}

}  // namespace

Status check_merge_request(const MergeRequest& request) {
  if (request.inputs.empty()) return usage_error("merge: no input; expected IN.pte[,IN.ptd] at least once");
  if (request.inputs.size() + (request.fallback ? 1 : 0) < 2) {
    return usage_error("merge: one input alone; expected at least two inputs, or one and --fallback");
  }
  if (request.output_pte.empty()) return usage_error("merge: no output; expected -o OUT.pte");
  size_t with_data = 0;
  for (const MergeSource& source : request.inputs) with_data += source.ptd_path.empty() ? 0 : 1;
  if (with_data != 0 && with_data != request.inputs.size()) {
    return usage_error("merge: " + std::to_string(with_data) + " of " + std::to_string(request.inputs.size()) +
                       " inputs name a data file; expected every input as IN.pte,IN.ptd, or none");
  }
  if (with_data != 0 && request.output_ptd.empty()) {
    return usage_error("merge: the inputs keep their weights in data files; expected --output-data OUT.ptd");
  }
  if (with_data == 0 && !request.output_ptd.empty()) {
    return usage_error("merge: --output-data " + request.output_ptd + " given, but no input has a data file");
  }
  if (!request.output_ptd.empty() && same_path(request.output_pte, request.output_ptd)) {
    return usage_error("merge: -o and --output-data name the same file " + request.output_pte);
  }
  return {};
}

namespace {

std::string variant_set(const std::vector<CudaVariant>& variants) {
  std::string out;
  for (const CudaVariant& v : variants) {
    out += out.empty() ? "" : ", ";
    out += v.fallback_only ? "compute_" + std::to_string(v.ptx_compute) + " fallback" : "sm" + std::to_string(v.target_sm);
  }
  return "[" + out + "]";
}

bool same_variant_set(const std::vector<CudaVariant>& a, const std::vector<CudaVariant>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].target_sm != b[i].target_sm || a[i].ptx_compute != b[i].ptx_compute ||
        a[i].fallback_only != b[i].fallback_only) {
      return false;
    }
  }
  return true;
}

// Libraries of all delegates, each key once; one key from two inputs must be
// the same library (keys are content hashes, so a clash is a broken input),
// and a key the first input already uses for other named data must hold the
// same bytes there, since the output keeps the first input's named data.
Result<std::vector<LibrarySource>> distinct_libraries(const Export& reference,
                                                      const std::vector<DelegateVariants>& per_delegate) {
  std::vector<LibrarySource> out;
  for (const DelegateVariants& delegate : per_delegate) {
    for (const LibrarySource& library : delegate.libraries) {
      const PteNamedData* existing = reference.pte().find_named_data(library.key);
      if (!existing) continue;
      Bytes bytes = reference.pte().named_data_bytes(*existing);
      if (bytes.size() != library.blob.bytes.size() || first_difference(bytes, library.blob.bytes)) {
        return invalid(pair_name(reference, *library.source) + " hold different bytes under the named-data key '" +
                       library.key + "'; expected one library per key");
      }
    }
  }
  for (const DelegateVariants& delegate : per_delegate) {
    for (const LibrarySource& library : delegate.libraries) {
      auto known = std::find_if(out.begin(), out.end(), [&](const LibrarySource& l) { return l.key == library.key; });
      if (known == out.end()) {
        out.push_back(library);
        continue;
      }
      if (known->blob.bytes.size() != library.blob.bytes.size() ||
          first_difference(known->blob.bytes, library.blob.bytes)) {
        return invalid(known->source->name() + " and " + library.source->name() + " hold different libraries under the key '" +
                       library.key + "'; expected one library per key");
      }
    }
  }
  return out;
}

}  // namespace
}  // namespace detail

Result<std::string> finish_interrupted_merge(const std::string& output_pte) {
  return detail::finish_interrupted_pair(output_pte);
}

Result<MergeResult> merge_programs(const MergeRequest& request) {
  using namespace detail;
  PTB_CHECK(check_merge_request(request));
  // First, so that this merge failing leaves a consistent pair either way.
  PTB_TRY(std::string finished, finish_interrupted_pair(request.output_pte));
  std::vector<Export> regular;
  regular.reserve(request.inputs.size());
  // Merge names each library anew by the SHA-256 of its bytes, so a blob
  // replaced under its old content-addressed key is refused here rather than
  // given a new key that matches it.
  for (const MergeSource& source : request.inputs) {
    PTB_TRY(Export loaded, load_export(source, false));
    PTB_CHECK(check_program_content_keys(*loaded.program, DataFileKeys::Check, request.progress));
    regular.push_back(std::move(loaded));
  }
  std::unique_ptr<Export> fallback;
  if (request.fallback) {
    PTB_TRY(Export loaded, load_export(*request.fallback, true));
    PTB_CHECK(check_program_content_keys(*loaded.program, DataFileKeys::Check, request.progress));
    fallback = std::make_unique<Export>(std::move(loaded));
  }
  LibraryScanCache scans(request.check_kernels);
  PTB_TRY(MergeResult result, merge_exports(request, std::move(regular), std::move(fallback), scans));
  result.finished_interrupted = std::move(finished);
  return result;
}

namespace detail {

Result<MergeResult> merge_exports(const MergeRequest& request, std::vector<Export> regular, std::unique_ptr<Export> fallback,
                                  LibraryScanCache& scans) {
  unsigned threads = comparison_threads(request.threads);
  // Checks and outputs point into each export's mappings, which stay put.
  const Export& reference = regular.front();
  CompareStats stats;
  stats.progress = request.progress;
  for (size_t i = 1; i <= regular.size(); ++i) {
    const Export* candidate = i < regular.size() ? &regular[i] : fallback.get();
    if (candidate) PTB_CHECK(check_same_program(reference, *candidate, threads, stats));
  }

  WeightCheck weights(reference);
  std::vector<DelegateVariants> per_delegate;
  for (size_t position = 0; position < reference.cuda.size(); ++position) {
    PTB_TRY(DelegateVariants chosen, select_variants(regular, fallback.get(), position, weights, scans));
    if (!per_delegate.empty() && !same_variant_set(per_delegate.front().variants, chosen.variants)) {
      return invalid("the inputs give " + reference.cuda[position].identity() + " the variants " +
                     variant_set(chosen.variants) + " but " + reference.cuda.front().identity() + " " +
                     variant_set(per_delegate.front().variants) + "; expected every CUDA delegate to end with the same set");
    }
    per_delegate.push_back(std::move(chosen));
  }
  PTB_TRY(std::vector<LibrarySource> libraries, distinct_libraries(reference, per_delegate));

  std::vector<MergedDelegate> merged;
  for (size_t position = 0; position < reference.cuda.size(); ++position) {
    const CudaDelegate& delegate = reference.cuda[position];
    CudaPayload payload;
    payload.form = CudaPayloadForm::MultiVariant;
    payload.variants = per_delegate[position].variants;
    payload.weights = delegate.payload->weights;
    merged.push_back({delegate.plan, delegate.index, encode_cuda_payload(payload)});
  }
  // Every check but the weight bytes has passed: write while comparing.
  OutputJob output(reference, std::move(merged), std::move(libraries), request.output_pte, request.output_ptd);
  output.start();
  Status compared = weights.run(threads, stats);
  if (!compared.ok()) {
    output.cancel();
    (void)output.wait();
    return compared.take_error();
  }
  PTB_CHECK(output.commit());

  MergeResult result;
  result.output_pte = request.output_pte;
  result.output_ptd = reference.ptd() ? request.output_ptd : std::string();
  result.variants = per_delegate.front().variants;
  for (DelegateVariants& delegate : per_delegate) {
    for (VariantOrigin& origin : delegate.origins) result.provenance.push_back(std::move(origin));
  }
  result.weight_count = weights.weight_count();
  result.weight_bytes = weights.weight_bytes();
  result.compared_bytes = stats.bytes_read;
  result.removed_signatures = remove_invalidated_signatures(request.output_pte);
  if (!result.output_ptd.empty()) {
    for (auto& path : remove_invalidated_signatures(result.output_ptd)) result.removed_signatures.push_back(std::move(path));
  }
  return result;
}

}  // namespace detail
}  // namespace ptb
