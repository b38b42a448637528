// What push and pull share about talking to a registry: how to reach it and
// how much to say while doing so. The rules (registry_client.h has the code):
//  - HTTPS with the system's CA store; plain HTTP only with plain_http or
//    for a loopback registry (localhost, 127.0.0.1, [::1]), as docker does.
//  - Credentials from docker's config.json (DOCKER_CONFIG) and its
//    credential helpers; the Bearer token flow (a 401's WWW-Authenticate
//    challenge sends us to the token endpoint it names) and Basic.
//    Credentials go only to the registry's own host and to the token realm
//    its challenge names, never to a host a redirect leads to.
//  - Redirects are followed only for blob downloads (registries backed by
//    S3 or a CDN answer a blob GET with a redirect to another host, which is
//    normal); the digest of what arrives is checked all the same. Any other
//    request that is redirected fails.
//  - 429 and 5xx answers, refused connections and stalls are retried up to
//    $PTBUNDLE_REGISTRY_RETRIES times (default 4) with doubling waits from
//    $PTBUNDLE_REGISTRY_BACKOFF_MS (default 500 ms; a Retry-After of at most 30 s
//    is honoured). A transfer under 1 KiB/s for $PTBUNDLE_REGISTRY_STALL_SECONDS
//    seconds (default 30) is a stall.
//  - The Distribution API's errors ({"errors": [{"code", "message"}]}) are
//    shown one after another in the error line, each "CODE: message".
#pragma once

#include <string>
#include <vector>

#include "ptbundle/base/progress.h"

namespace ptb {

struct RegistryOptions {
  bool plain_http = false;  // allow http:// to a registry that is not loopback
  Progress progress;        // each blob's bytes as they are sent or received
};

}  // namespace ptb
