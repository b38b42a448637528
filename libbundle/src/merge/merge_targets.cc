// One part in ExecuTorch's older single-blob CUDA layout, across bundles: its
// payload ("<so_key>\n<weights_key>") names no GPU target, and a program can
// hold only one library per delegate, so each bundle's program is kept whole
// under the target its library's kernels show, and the weights, which must
// be identical (same key, same bytes), are kept once.
#include <algorithm>
#include <map>

#include "merge/merge_bundle_internal.h"

namespace ptb::detail {
namespace {

std::string sm_list(const std::vector<uint32_t>& sms) {
  std::string out;
  for (uint32_t sm : sms) out += (out.empty() ? "sm_" : ", sm_") + std::to_string(sm);
  return out;
}

// The target a program's libraries are built for: the one SM they hold
// cubins for, or the PTX they hold when they hold no cubin.
Result<GpuTarget> target_of(const Export& e, LibraryScanCache& scans) {
  std::vector<uint32_t> cubins, ptx;
  for (const CudaDelegate& delegate : e.cuda) {
    const PteNamedData* entry = e.pte().find_named_data(delegate.payload->so_key);
    if (!entry) {
      return invalid(e.name() + ": " + delegate.identity() + ": the library '" + delegate.payload->so_key +
                     "' is not in the program's named data; expected the export's .pte to hold it");
    }
    std::string name = e.name() + ": named data '" + delegate.payload->so_key + "'";
    PTB_TRY(const LibraryKernels* kernels, scans.get(delegate.payload->so_key, e.pte().named_data_bytes(*entry), name, &e.pte()));
    for (uint32_t sm : kernels->cubin_sms)
      if (std::find(cubins.begin(), cubins.end(), sm) == cubins.end()) cubins.push_back(sm);
    for (uint32_t sm : kernels->ptx_sms)
      if (std::find(ptx.begin(), ptx.end(), sm) == ptx.end()) ptx.push_back(sm);
  }
  std::sort(cubins.begin(), cubins.end());
  std::sort(ptx.begin(), ptx.end());
  if (cubins.size() == 1) return GpuTarget{cubins.front(), ArchVariant::Plain, false};
  if (cubins.size() > 1) {
    return invalid(e.name() + ": its libraries hold cubins for " + sm_list(cubins) +
                   "; expected the cubins of one GPU target, which names the program in the merged bundle");
  }
  if (!ptx.empty()) return GpuTarget{ptx.front(), ArchVariant::Plain, true};
  return invalid(e.name() + ": no GPU kernels found in its libraries; expected cubins or PTX that say which GPU it is for");
}

// The weights blob every single-blob delegate reads: the same key, and the
// same bytes, in every bundle, since all the programs will read one file.
Status queue_same_weights(const Export& first, const Export& other, std::vector<CompareGroup>& groups,
                          std::vector<std::string>& labels) {
  for (size_t i = 0; i < first.cuda.size(); ++i) {
    const std::string& key = first.cuda[i].payload->weights_key;
    const std::string& other_key = other.cuda[i].payload->weights_key;
    if (key != other_key) {
      return invalid(pair_name(first, other) + " have different weights: " + first.cuda[i].identity() +
                     " reads '" + key + "' vs '" + other_key + "'; expected the same weights in every bundle");
    }
    auto blob = first.find_blob(key);
    auto other_blob = other.find_blob(key);
    if (!blob || !other_blob) {
      const Export& missing = blob ? other : first;
      return invalid(missing.name() + ": " + first.cuda[i].identity() + ": the weights '" + key +
                     "' are neither in the program nor in its data file");
    }
    if (blob->bytes.size() != other_blob->bytes.size()) {
      return invalid(pair_name(first, other) + " have different weights: '" + key + "' holds " +
                     std::to_string(blob->bytes.size()) + " bytes vs " + std::to_string(other_blob->bytes.size()));
    }
    groups.push_back({*blob, {*other_blob}});
    labels.push_back(pair_name(first, other) + " have different weights: '" + key + "'");
  }
  return {};
}

std::vector<VariantOrigin> origins_of(const Export& e, const GpuTarget& target) {
  std::vector<VariantOrigin> out;
  for (const CudaDelegate& delegate : e.cuda) {
    VariantOrigin origin;
    origin.method = delegate.method;
    origin.delegate_index = static_cast<uint32_t>(delegate.index);
    origin.kind = target.ptx ? VariantKind::PtxFallback : VariantKind::Cubin;
    origin.target_sm = target.sm;
    origin.ptx_compute = target.ptx ? target.sm : 0;
    origin.so_key = delegate.payload->so_key;
    if (const PteNamedData* entry = e.pte().find_named_data(delegate.payload->so_key)) origin.so_size = entry->size;
    origin.source_pte = e.name();
    out.push_back(origin);
  }
  return out;
}

}  // namespace

Result<PerTargetPlan> plan_per_target(const std::vector<PartProgram>& programs, std::vector<Export> exports,
                                      LibraryScanCache& scans, unsigned threads) {
  PerTargetPlan plan;
  for (const Export& loaded : exports) {
    for (const CudaDelegate& delegate : loaded.cuda) {
      if (delegate.payload->form == CudaPayloadForm::MultiVariant) {
        return invalid(loaded.name() + ": " + delegate.identity() +
                       " carries the multi-variant payload while other programs of this part use the single-blob "
                       "layout; expected one layout across the bundles");
      }
    }
  }
  plan.exports = std::move(exports);

  const Export& first = plan.exports.front();
  CompareStats stats;
  std::vector<CompareGroup> groups;
  std::vector<std::string> labels;
  std::map<std::string, const Export*> owners;
  for (size_t i = 0; i < plan.exports.size(); ++i) {
    const Export& e = plan.exports[i];
    if (i > 0) {
      PTB_CHECK(check_same_program(first, e, threads, stats));
      PTB_CHECK(queue_same_weights(first, e, groups, labels));
    }
    GpuTarget target;
    if (programs[i].target.empty()) {
      PTB_TRY(target, target_of(e, scans));
    } else if (auto listed = parse_gpu_target(programs[i].target)) {
      target = *listed;
    } else {
      return invalid(e.name() + ": the bundle lists it for '" + programs[i].target + "'; expected a GPU target such as sm_90");
    }
    auto [owner, fresh] = owners.emplace(target.name(), &e);
    if (!fresh) {
      return invalid(owner->second->name() + " and " + e.name() + " are both programs for " + target.name() +
                     "; expected each GPU target once");
    }
    plan.targets.push_back(target);
    for (VariantOrigin& origin : origins_of(e, target)) plan.provenance.push_back(std::move(origin));
  }
  if (auto mismatch = compare_groups(groups, threads, stats)) {
    return invalid(labels[mismatch->group] + ": byte " + std::to_string(mismatch->offset) + " differs; expected identical weights");
  }
  return plan;
}

}  // namespace ptb::detail
