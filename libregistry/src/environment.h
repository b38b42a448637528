// The environment variables libregistry reads, read here and nowhere else
// in it (ptbundle(1), ENVIRONMENT, explains each). A value that is not a
// number in range leaves the default.
#pragma once

#include <string>

namespace ptb::detail {

struct RegistryEnvironment {
  int retries = 4;                 // PTBUNDLE_REGISTRY_RETRIES, 0..20
  int backoff_ms = 500;            // PTBUNDLE_REGISTRY_BACKOFF_MS, 0..60000
  long stall_seconds = 30;         // PTBUNDLE_REGISTRY_STALL_SECONDS, 1..3600
  std::string docker_config_path;  // $DOCKER_CONFIG/config.json, else $HOME/.docker/config.json, else ""
};

RegistryEnvironment registry_environment();

}  // namespace ptb::detail
