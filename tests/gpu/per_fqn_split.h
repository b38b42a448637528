// A package's weights blob seen as ExecuTorch's per-FQN weights: one tensor
// per constant, cut out of the blob in the library's own order (the blob is
// those constants back to back), described by the <name>.constants.json that
// tests/gpu/make_packages.py writes beside each package. The GPU tests and
// bench_builtin bind a package's weights both ways with it.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/formats/pte.h"

namespace ptb::gpu_packages {

// `constants`: [{"fqn", "dtype", "data_size", "sizes", "strides",
// "from_folded"}, ...]; `context` names it in errors.
inline Result<PartWeights> split_per_fqn(const PartWeights& blob, const nlohmann::json& constants,
                                         const std::string& context) {
  if (!constants.is_array()) return invalid(context + ": not a JSON array of constants");
  PartWeights weights;
  weights.layout = WeightsLayout::PerFqn;
  weights.file = blob.file + " (split per FQN)";
  uint64_t offset = 0;
  for (const nlohmann::json& constant : constants) {
    if (constant.value("from_folded", false)) continue;
    FqnWeightBytes weight;
    weight.meta.fqn = constant.value("fqn", "");
    weight.meta.storage_key = "split:" + weight.meta.fqn;
    weight.meta.storage_nbytes = constant.value("data_size", uint64_t{0});
    auto dtype = scalar_type_from_name(constant.value("dtype", ""));
    if (!dtype) return invalid(context + ": constant '" + weight.meta.fqn + "' has an unknown dtype");
    weight.meta.dtype = *dtype;
    weight.meta.device_type = 1;
    weight.meta.sizes = constant.value("sizes", std::vector<int64_t>{});
    weight.meta.strides = constant.value("strides", std::vector<int64_t>{});
    if (offset + weight.meta.storage_nbytes > blob.blob.size())
      return invalid(context + ": the constants run past the blob's " + std::to_string(blob.blob.size()) + " bytes");
    weight.bytes = blob.blob.subspan(offset, weight.meta.storage_nbytes);
    offset += weight.meta.storage_nbytes;
    weights.tensors.push_back(std::move(weight));
  }
  return weights;
}

inline Result<PartWeights> split_per_fqn(const PartWeights& blob, const std::string& constants_json) {
  std::ifstream in(constants_json);
  if (!in) return io_error(constants_json + ": cannot open");
  return split_per_fqn(blob, nlohmann::json::parse(in, nullptr, false), constants_json);
}

}  // namespace ptb::gpu_packages
