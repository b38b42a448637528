// The built-in runtime's model backend and the figures its module reports.
#pragma once

#include <memory>

#include "runtime_module.h"

namespace ptb::shim {

Result<std::unique_ptr<detail::ModelBackend>> load_builtin_model(const LoadRequest& request);
Result<double> builtin_pinned_upload(uint64_t bytes, int device, int repeats);

}  // namespace ptb::shim
