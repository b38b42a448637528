// Registry credentials where docker, oras and skopeo keep them:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json. For a registry
// host, in docker's order: credHelpers[host] or else credsStore names a
// helper program `docker-credential-<name>`, run with `get` and the host on
// its standard input (its JSON answer: Username, Secret); else
// auths[host].auth (base64 "user:password") or its username/password. An
// "identitytoken" (an OAuth refresh token) is not supported and says so.
// Keys of auths may carry a scheme and a path ("https://ghcr.io/v1/"): the
// host is what is compared.
#pragma once

#include <optional>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::detail {

struct Credentials {
  std::string username;
  std::string password;
  std::string source;  // "~/.docker/config.json auths", "docker-credential-pass", for messages
};

// nullopt when none is configured for `registry`; an error for a config file
// or helper that is present but broken.
Result<std::optional<Credentials>> find_credentials(const std::string& registry);

}  // namespace ptb::detail
