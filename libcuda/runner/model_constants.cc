#include "runner/model_constants.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "ptbundle/base/dtype.h"

namespace ptb::detail {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Result<Container> create_container(const AotiAbi& abi, int device, const std::string& label,
                                   const std::string& cubin_dir) {
  const auto start = Clock::now();
  const std::string where = "cuda:" + std::to_string(device);
  Container container;
  const char* kernels = cubin_dir.empty() ? nullptr : cubin_dir.c_str();
  if (abi.create_with_device(&container.handle, 1, where.c_str(), kernels) != kAotiSuccess || !container.handle) {
    return invalid(label + ": AOTInductorModelContainerCreateWithDevice(" + where + ") failed" + kSeeAbove);
  }
  container.create_ms = ms_since(start);
  size_t inputs = 0, outputs = 0;
  if (abi.get_num_inputs(container.handle, &inputs) != kAotiSuccess ||
      abi.get_num_outputs(container.handle, &outputs) != kAotiSuccess) {
    abi.destroy(container.handle);
    return invalid(label + ": the library does not say how many inputs and outputs it has" + kSeeAbove);
  }
  for (size_t i = 0; i < inputs; ++i) {
    const char* name = nullptr;
    if (abi.get_input_name) abi.get_input_name(container.handle, i, &name);
    container.inputs.push_back(name ? name : "input " + std::to_string(i));
  }
  for (size_t i = 0; i < outputs; ++i) {
    const char* name = nullptr;
    if (abi.get_output_name) abi.get_output_name(container.handle, i, &name);
    container.outputs.push_back(name ? name : "output " + std::to_string(i));
  }
  return container;
}

Result<std::vector<ConstantInfo>> list_constants(const AotiAbi& abi, ContainerHandle container,
                                                 const std::string& label) {
  std::vector<ConstantInfo> list;
  if (!abi.get_num_constants || !abi.get_constant_name) return list;
  size_t count = 0;
  if (abi.get_num_constants(container, &count) != kAotiSuccess) {
    return invalid(label + ": AOTInductorModelContainerGetNumConstants failed" + kSeeAbove);
  }
  for (size_t i = 0; i < count; ++i) {
    ConstantInfo info;
    const char* text = nullptr;
    if (abi.get_constant_name(container, i, &text) != kAotiSuccess || !text) {
      return invalid(label + ": AOTInductorModelContainerGetConstantName(" + std::to_string(i) + ") failed");
    }
    info.name = text;
    text = nullptr;
    if (abi.get_constant_original_fqn && abi.get_constant_original_fqn(container, i, &text) == kAotiSuccess && text)
      info.fqn = text;
    if (abi.get_constant_dtype) abi.get_constant_dtype(container, i, &info.dtype);
    if (abi.get_constant_data_size) abi.get_constant_data_size(container, i, &info.data_size);
    if (abi.get_constant_from_folded) abi.get_constant_from_folded(container, i, &info.folded);
    list.push_back(std::move(info));
  }
  return list;
}

Result<uint64_t> blob_bytes_needed(const PartWeights& weights, const std::vector<ConstantInfo>& constants,
                                   const std::string& label) {
  uint64_t needed = 0;
  for (const auto& constant : constants)
    if (!constant.folded) needed += constant.data_size;
  if (needed > weights.blob.size()) {
    return invalid(weights.file + ": weights blob '" + weights.blob_key + "' holds " +
                   std::to_string(weights.blob.size()) + " bytes; the " + std::to_string(constants.size()) +
                   " constants of " + label + "'s library need " + std::to_string(needed) +
                   " (the blob is short: export the part again)");
  }
  return needed;
}

Result<ConstantsByFqn> match_per_fqn(const PartWeights& weights, const std::vector<ConstantInfo>& constants,
                                     const std::string& label) {
  ConstantsByFqn by_fqn;
  for (const auto& constant : constants)
    if (!constant.fqn.empty()) by_fqn[constant.fqn].push_back(&constant);
  if (by_fqn.empty() && !weights.tensors.empty()) {
    return invalid(label + ": the library names no constant by its FQN (AOTInductorModelContainerGet"
                           "ConstantOriginalFQN), so its per-FQN weights in " + weights.file + " cannot be bound");
  }
  std::unordered_map<std::string, bool> given;
  for (const auto& tensor : weights.tensors) given[tensor.meta.fqn] = true;
  for (const auto& constant : constants) {
    if (!constant.folded && !constant.fqn.empty() && !given.count(constant.fqn)) {
      return invalid(weights.file + ": no weight for constant '" + constant.fqn + "' of " + label + "'s library");
    }
  }
  for (const FqnWeightBytes& weight : weights.tensors) {
    auto found = by_fqn.find(weight.meta.fqn);
    if (found == by_fqn.end()) {
      return invalid(weights.file + ": weight '" + weight.meta.fqn + "' (entry '" + weight.meta.storage_key +
                     "') is not a constant of " + label + "'s library");
    }
    const int32_t library_dtype = found->second.front()->dtype;
    if (library_dtype >= 0 && library_dtype != weight.meta.dtype) {
      return invalid(weights.file + ": weight '" + weight.meta.fqn + "' is " +
                     std::string(scalar_type_name(weight.meta.dtype)) + "; the library expects " + std::string(scalar_type_name(library_dtype)));
    }
  }
  return by_fqn;
}

ArenaLayout arena_layout(const PartWeights& weights) {
  ArenaLayout layout;
  layout.offsets.assign(weights.tensors.size(), 0);
  for (size_t i = 0; i < weights.tensors.size(); ++i) {
    if (weights.tensors[i].meta.device_type != 1) continue;
    layout.offsets[i] = layout.bytes;
    layout.bytes += (weights.tensors[i].bytes.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  }
  return layout;
}

std::vector<HostToDevice> arena_copies(const PartWeights& weights, const ArenaLayout& layout, uint8_t* arena) {
  std::vector<HostToDevice> copies;
  for (size_t i = 0; i < weights.tensors.size(); ++i) {
    if (weights.tensors[i].meta.device_type == 1 && !weights.tensors[i].bytes.empty())
      copies.push_back({weights.tensors[i].bytes, arena + layout.offsets[i]});
  }
  return copies;
}

Status bind_per_fqn(const AotiAbi& abi, ContainerHandle container, const PartWeights& weights,
                    const ConstantsByFqn& by_fqn, const std::vector<AtenTensorHandle>& handles,
                    const std::string& label) {
  std::vector<ConstantEntry> pairs;
  std::unordered_map<std::string, AtenTensorHandle> map;
  for (size_t i = 0; i < weights.tensors.size() && i < handles.size(); ++i) {
    for (const ConstantInfo* constant : by_fqn.at(weights.tensors[i].meta.fqn)) {
      pairs.push_back({constant->name.c_str(), handles[i]});
      map[constant->name] = handles[i];
    }
  }
  int32_t code = 0;
  if (abi.update_user_managed_constant_buffer_pairs) {
    code = abi.update_user_managed_constant_buffer_pairs(container, pairs.data(), pairs.size(), false, true);
  } else if (abi.update_user_managed_constant_buffer) {
    code = abi.update_user_managed_constant_buffer(container, &map, false, true);
  } else if (abi.update_constant_buffer) {
    // Older libraries: the container copies each weight into its own blob.
    code = abi.update_constant_buffer(container, &map, false, true);
  } else {
    return invalid(label + ": the library exports no constant-buffer entry point "
                           "(AOTInductorModelContainerUpdateUserManagedConstantBuffer), so per-FQN weights cannot "
                           "be bound");
  }
  if (code != kAotiSuccess) return invalid(label + ": binding the weights of " + weights.file + " failed" + kSeeAbove);
  return {};
}

Status check_constants_present(const AotiAbi& abi, ContainerHandle container, const std::string& label,
                               const PartWeights* weights) {
  if (!abi.extract_constants_map) return {};
  PTB_TRY(auto list, list_constants(abi, container, label));
  std::unordered_map<std::string, AtenTensorHandle> present;
  if (abi.extract_constants_map(container, &present, false) != kAotiSuccess) return {};
  std::string missing;
  size_t count = 0;
  for (const auto& constant : list) {
    if (constant.folded || constant.data_size == 0) continue;
    const std::string& key = constant.fqn.empty() ? constant.name : constant.fqn;
    if (present.count(key)) continue;
    if (++count <= 3) missing += (missing.empty() ? "" : ", ") + key;
  }
  if (count == 0) return {};
  std::string from = weights && weights->layout != WeightsLayout::None
                         ? std::string(" after loading ") + weights->file
                         : std::string(" and the part has no weights");
  return invalid(label + ": " + std::to_string(count) + " constants of the library have no value" + from + " (" +
                 missing + (count > 3 ? ", ..." : "") + ")");
}

void fault_in(Bytes bytes) {
  if (bytes.empty()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data()) & ~(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(bytes.data() + bytes.size());
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
}

void fault_in(const PartWeights& weights) {
  if (weights.layout == WeightsLayout::Blob) fault_in(weights.blob);
  for (const FqnWeightBytes& weight : weights.tensors) fault_in(weight.bytes);
}

std::string staging_text(const Stager& stager) {
  const StagingOptions& options = stager.options();
  std::string where = stager.cpus().empty() ? std::string()
                                            : " on the " + std::to_string(stager.cpus().size()) + " CPUs near the GPU";
  char busy[96];
  std::snprintf(busy, sizeof busy, "; %llu copies took %.2f ms", static_cast<unsigned long long>(stager.calls()),
                stager.busy_ms());
  return "staged through pinned buffers (" + std::to_string(options.threads) + " threads x " +
         std::to_string(options.buffers_per_thread) + " x " + std::to_string(options.chunk_bytes >> 20) + " MiB" +
         where + busy + ")";
}

}  // namespace ptb::detail
