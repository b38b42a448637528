// One AOTInductor model container on one GPU, driven through its C ABI
// (aoti_abi.h) the same way under either runtime: the library opened from
// its bytes, the container created, its weights bound (a blob through
// AOTInductorModelUpdateConstantsFromBlob, or per-FQN weights in one
// allocation bound as user-managed constants), then calls, timed calls and
// calls on a caller's buffers, optionally replayed from a CUDA graph. What
// differs between the runtimes is behind DeviceOps (device_ops.h).
#pragma once

#include <memory>

#include "runner/device_ops.h"
#include "runner/runtime_module.h"

namespace ptb::detail {

// Loads the part described by `request` with `ops` (the runtime's), which
// the model keeps.
Result<std::unique_ptr<ModelBackend>> load_container(const LoadRequest& request, std::unique_ptr<DeviceOps> ops);

// The host-to-device copy rate from pinned memory (runner.h), measured with
// this module's CUDA runtime.
Result<double> measure_pinned_upload(uint64_t bytes, int device, int repeats);

}  // namespace ptb::detail
