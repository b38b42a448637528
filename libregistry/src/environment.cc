#include "environment.h"

#include <cstdlib>

namespace ptb::detail {
namespace {

long number_in(const char* name, long fallback, long low, long high) {
  if (const char* text = std::getenv(name)) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (end != text && *end == 0 && value >= low && value <= high) return value;
  }
  return fallback;
}

}  // namespace

RegistryEnvironment registry_environment() {
  RegistryEnvironment environment;
  environment.retries = static_cast<int>(number_in("PTBUNDLE_REGISTRY_RETRIES", environment.retries, 0, 20));
  environment.backoff_ms = static_cast<int>(number_in("PTBUNDLE_REGISTRY_BACKOFF_MS", environment.backoff_ms, 0, 60000));
  environment.stall_seconds = number_in("PTBUNDLE_REGISTRY_STALL_SECONDS", environment.stall_seconds, 1, 3600);
  if (const char* dir = std::getenv("DOCKER_CONFIG"); dir && *dir) {
    environment.docker_config_path = std::string(dir) + "/config.json";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    environment.docker_config_path = std::string(home) + "/.docker/config.json";
  }
  return environment;
}

}  // namespace ptb::detail
