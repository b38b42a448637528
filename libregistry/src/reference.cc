#include "ptbundle/registry/reference.h"

#include "ptbundle/base/text.h"

namespace ptb {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One component of a repository name, as the distribution spec's grammar has
// it: lowercase letters and digits, joined by '.', '_', '__' or runs of '-'.
bool valid_component(std::string_view part) {
  if (part.empty() || !is_lower_alnum(part.front()) || !is_lower_alnum(part.back())) return false;
  for (size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (is_lower_alnum(c) || c == '-') continue;
    if (c == '.' || c == '_') {
      // '.', '_' or '__' between alphanumerics; '-' runs are free.
      if (c == '_' && i + 1 < part.size() && part[i + 1] == '_') ++i;
      if (i + 1 >= part.size() || !is_lower_alnum(part[i + 1])) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool valid_repository(std::string_view repo) {
  if (repo.empty() || repo.size() > 255) return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = repo.find('/', start);
    if (!valid_component(repo.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)))
      return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

bool valid_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  for (size_t i = 0; i < tag.size(); ++i) {
    const char c = tag[i];
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && (i == 0 || (c != '.' && c != '-'))) return false;
  }
  return true;
}

bool valid_registry(std::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool is_sha256_digest(std::string_view text) {
  if (text.size() != 71 || !text.starts_with("sha256:")) return false;
  for (char c : text.substr(7))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_loopback_registry(std::string_view registry) {
  std::string_view host = registry;
  if (host.starts_with("[")) {
    host = host.substr(0, host.find(']') + 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

std::string Reference::text() const {
  std::string out = registry + "/" + repository;
  if (tag) out += ":" + *tag;
  if (digest) out += "@" + *digest;
  return out;
}

Result<Reference> parse_reference(std::string_view text) {
  const std::string shown = in_quotes(std::string(text));
  const std::string expected = "; expected registry[:port]/repository[:tag][@sha256:<64 hex digits>]";
  Reference ref;
  std::string_view rest = text;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    const std::string_view digest = rest.substr(at + 1);
    if (!is_sha256_digest(digest))
      return usage_error("reference " + shown + ": the digest " + in_quotes(std::string(digest)) +
                         " is not sha256: and 64 lowercase hex digits" + expected);
    ref.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos)
    return usage_error("reference " + shown + ": names no registry host" + expected);
  const std::string_view host = rest.substr(0, slash);
  // Docker's rule for telling a host from a repository's first component.
  if (host != "localhost" && host.find('.') == std::string_view::npos && host.find(':') == std::string_view::npos)
    return usage_error("reference " + shown + ": " + in_quotes(std::string(host)) +
                       " is not a registry host (it has no '.' or ':' and is not localhost); ptbundle implies no "
                       "default registry" + expected);
  if (!valid_registry(host))
    return usage_error("reference " + shown + ": invalid registry host " + in_quotes(std::string(host)) + expected);
  ref.registry = std::string(host);
  rest = rest.substr(slash + 1);
  // A tag follows the last ':' after the last '/'.
  const size_t last_slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    const std::string_view tag = rest.substr(colon + 1);
    if (!valid_tag(tag))
      return usage_error("reference " + shown + ": invalid tag " + in_quotes(std::string(tag)) +
                         "; expected letters, digits, '_', '.', '-' (128 at most, not starting with '.' or '-')");
    ref.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (!valid_repository(rest))
    return usage_error("reference " + shown + ": invalid repository " + in_quotes(std::string(rest)) +
                       "; expected lowercase components of letters and digits joined by '.', '_', '__' or '-', "
                       "separated by '/'");
  ref.repository = std::string(rest);
  if (!ref.tag && !ref.digest) ref.tag = "latest";
  return ref;
}

}  // namespace ptb
