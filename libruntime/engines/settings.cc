#include "engines/settings.h"

#include <cstdlib>
#include <string_view>

namespace ptb::builtin {
namespace {

std::string text_of(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

Settings read_settings() {
  Settings s;
  const char* graph = std::getenv("PTBUNDLE_CUDNN_GRAPH");
  s.cudnn_graph = !(graph && std::string_view(graph) == "0");
  s.trace_shims = std::getenv("PTBUNDLE_TRACE_SHIMS") != nullptr;
  s.cublas_dir = text_of("PTBUNDLE_CUBLAS_DIR");
  s.cudnn_dir = text_of("PTBUNDLE_CUDNN_DIR");
  s.cuda_home = text_of("CUDA_HOME");
  return s;
}

}  // namespace

const Settings& settings() {
  static const Settings kept = read_settings();
  return kept;
}

}  // namespace ptb::builtin
