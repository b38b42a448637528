// A registry reference as `push` and `pull` take it:
//   registry[:port]/repository[:tag][@sha256:<64 hex>]
// The registry host is always named (no implied docker.io): a bundle sent to
// a registry no one meant would be a leak. Without tag or digest the tag is
// "latest", as docker, oras and skopeo do.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ptbundle/base/result.h"

namespace ptb {

struct Reference {
  std::string registry;    // "localhost:5000", "ghcr.io"
  std::string repository;  // "robots/arm"
  std::optional<std::string> tag;
  std::optional<std::string> digest;  // "sha256:<64 lowercase hex>"

  // The tag or the digest, as the manifest URL names it (the digest wins).
  std::string manifest_name() const { return digest ? *digest : tag.value_or("latest"); }
  std::string text() const;  // as given, normalized
};

Result<Reference> parse_reference(std::string_view text);

// "sha256:" followed by 64 lowercase hex digits.
bool is_sha256_digest(std::string_view text);

// Whether the host part of a registry ("localhost:5000", "[::1]:80") is the
// loopback interface, where plain HTTP is allowed without --plain-http.
bool is_loopback_registry(std::string_view registry);

}  // namespace ptb
