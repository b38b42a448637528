// What both runtimes do the same way around a model container's weights:
// list the constants the library declares, check a part's weights against
// them before anything is copied, place per-FQN weights in one allocation,
// bind them, and check afterwards that every constant has a value. The
// runtimes differ only in what backs a tensor handle and how bytes reach the
// GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/runner.h"
#include "runner/aoti_abi.h"
#include "runner/stager.h"

namespace ptb::detail {

inline constexpr const char* kSeeAbove = " (the library printed its reason on stderr)";

// Below this, setting up the pinned buffers (a few ms) costs more than
// staging saves.
inline constexpr uint64_t kStageWeightsAtLeast = 16ull << 20;

// Each per-FQN weight starts at a multiple of this in their shared
// allocation: a multiple of every element size, and what cudaMalloc itself
// guarantees.
inline constexpr uint64_t kWeightAlignment = 256;

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start);

// A new model container on GPU `device`, with its inputs' and outputs'
// names ("input 0" where the library names none).
struct Container {
  ContainerHandle handle = nullptr;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  double create_ms = 0;
};
// `cubin_dir`: the folder of the library's kernel files (kernel_folder.h),
// "" when it embeds its kernels.
Result<Container> create_container(const AotiAbi& abi, int device, const std::string& label,
                                   const std::string& cubin_dir);

struct ConstantInfo {
  std::string name;
  std::string fqn;
  int32_t dtype = -1;  // -1: the library does not say
  size_t data_size = 0;
  bool folded = false;
};

// Empty when the library does not export the constant-listing entry points.
Result<std::vector<ConstantInfo>> list_constants(const AotiAbi& abi, ContainerHandle container,
                                                 const std::string& label);

// The bytes the library reads out of a weights blob: every constant it does
// not fold itself. Fails when the blob is shorter.
Result<uint64_t> blob_bytes_needed(const PartWeights& weights, const std::vector<ConstantInfo>& constants,
                                   const std::string& label);

// Per-FQN weights against the library's constants: each constant has a
// weight, each weight is a constant of the library with its dtype. The
// constants by FQN (one FQN may back several constant names).
using ConstantsByFqn = std::unordered_map<std::string, std::vector<const ConstantInfo*>>;
Result<ConstantsByFqn> match_per_fqn(const PartWeights& weights, const std::vector<ConstantInfo>& constants,
                                     const std::string& label);

// Where each per-FQN weight that lives on the GPU goes in their shared
// allocation.
struct ArenaLayout {
  std::vector<uint64_t> offsets;  // by weight; 0 for weights kept on the CPU
  uint64_t bytes = 0;
};
ArenaLayout arena_layout(const PartWeights& weights);

// The host-to-device copies that fill an arena at `arena` with `weights`.
std::vector<HostToDevice> arena_copies(const PartWeights& weights, const ArenaLayout& layout, uint8_t* arena);

// One handle per weight, bound to every constant name of its FQN through the
// richest entry point the library exports. The handles stay the caller's.
Status bind_per_fqn(const AotiAbi& abi, ContainerHandle container, const PartWeights& weights,
                    const ConstantsByFqn& by_fqn, const std::vector<AtenTensorHandle>& handles,
                    const std::string& label);

// After loading: every constant the library reads has a value, or its first
// run reads through a null pointer on the GPU.
Status check_constants_present(const AotiAbi& abi, ContainerHandle container, const std::string& label,
                               const PartWeights* weights);

// Maps the pages of `bytes` ahead of a copy (MADV_POPULATE_READ, Linux 5.14+;
// elsewhere the copy faults them in as before).
void fault_in(Bytes bytes);
void fault_in(const PartWeights& weights);

// "staged through pinned buffers (8 threads x 2 x 4 MiB on the 8 CPUs near
// the GPU; 3 copies took 9.10 ms)"
std::string staging_text(const Stager& stager);

}  // namespace ptb::detail
