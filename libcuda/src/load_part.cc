// Loading an opened part on the GPU (run_part.h): the one place a RunPart
// becomes a LoadRequest.
#include "ptbundle/cuda/run_part.h"

namespace ptb {

Result<AotiModel> load_part(const RunPart& part, const LoadOptions& options) {
  LoadRequest request;
  request.label = "part " + part.name;
  request.library = part.library;
  request.library_origin = part.source + ": " + part.library_key;
  request.kernel_files = part.kernel_files;
  request.weights = &part.weights;
  request.device = options.device;
  // A .pt2 records no signature: the library checks its own inputs.
  request.library_checks_inputs = !part.inputs;
  request.staged_upload = options.staged_upload;
  request.runtime = options.runtime;
  request.cuda_graphs = options.cuda_graphs;
  request.seed = options.seed;
  request.tuned = options.tuned;
  return AotiModel::load(std::move(request));
}

}  // namespace ptb
