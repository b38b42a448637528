// Bundle-level merge, shared between merge_bundle.cc (bundles, manifest,
// output folder) and merge_targets.cc (parts kept per GPU target).
#pragma once

#include <string>
#include <vector>

#include "merge/merge_internal.h"

namespace ptb::detail {

// One program of a part in one input bundle.
struct PartProgram {
  std::string pte;
  std::string ptd;     // "" when the part has no data file
  std::string target;  // from the input manifest; "" when the program is untargeted
};


// Every program of a single-blob part checked against the first (same
// program, same weights key and bytes), each under its target.
struct PerTargetPlan {
  std::vector<Export> exports;     // in the order of the programs given
  std::vector<GpuTarget> targets;  // parallel to exports
  std::vector<VariantOrigin> provenance;
};
// `exports` are `programs` as loaded (load_export with every payload form taken).
Result<PerTargetPlan> plan_per_target(const std::vector<PartProgram>& programs, std::vector<Export> exports,
                                      LibraryScanCache& scans, unsigned threads);

}  // namespace ptb::detail
