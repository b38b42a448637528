// The Distribution API calls push and pull make, over one keep-alive
// connection, with authentication and retries (registry.h says the rules).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "credentials.h"
#include "http.h"
#include "ptbundle/registry/reference.h"
#include "ptbundle/registry/registry.h"

namespace ptb::detail {

inline constexpr const char* kOciManifestMediaType = "application/vnd.oci.image.manifest.v1+json";

struct BlobBody {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string text;  // when fd < 0
};

enum class UploadAction { Existing, Mounted, Uploaded };
const char* upload_action_name(UploadAction action);  // "existing", "mounted", "uploaded"

struct FetchedManifest {
  std::string body;
  std::string content_type;
  std::string digest_header;  // Docker-Content-Digest, when sent
};

class RegistryClient {
 public:
  // `push`: the token scope asks for push too.
  static Result<RegistryClient> open(const Reference& ref, const RegistryOptions& options, bool push);

  RegistryClient(RegistryClient&&) noexcept;
  RegistryClient& operator=(RegistryClient&&) noexcept;
  ~RegistryClient();

  const std::string& base() const { return base_; }  // "https://host:port"
  const Reference& reference() const { return ref_; }

  Result<bool> blob_exists(const std::string& digest);
  // HEAD first; then a mount from each of `mount_from` (repositories of the
  // same registry); then an upload: one PUT up to `chunk` bytes, else PATCHes
  // of `chunk` bytes with Content-Range, then the PUT with ?digest=, which
  // the registry checks.
  Result<UploadAction> put_blob(const BlobBody& body, const std::string& digest, const std::vector<std::string>& mount_from,
                                uint64_t chunk, const std::function<void(uint64_t, uint64_t)>& progress);
  // The manifest under `name` (a tag or a digest); the digest the registry
  // answers with, checked against `digest` when set.
  Result<std::string> put_manifest(const std::string& body, const std::string& name, const std::string& media_type);
  Result<FetchedManifest> get_manifest(const std::string& name, uint64_t max_bytes);
  // The blob's bytes to `sink`, redirects followed (registry.h). Errors from
  // the sink end it.
  Status get_blob(const std::string& digest, const std::function<Status(Bytes)>& sink,
                  const std::function<void(uint64_t, uint64_t)>& progress);

 private:
  RegistryClient() = default;
  // `request.url` is a path ("/v2/...") or a URL of the registry's host.
  Result<HttpResponse> send(HttpRequest request, const std::string& extra_scope = {});
  Status authenticate(const HttpResponse& challenge, const std::string& extra_scope);
  std::string url(const std::string& path) const;
  Error status_error(const HttpRequest& request, const HttpResponse& response) const;

  Reference ref_;
  RegistryOptions options_;
  bool push_ = false;
  std::string base_;
  std::string authority_;  // lowercase host[:port] of base_
  std::unique_ptr<HttpConnection> connection_;
  HttpLimits limits_;
  std::string authorization_;  // the header's value once authenticated
  std::optional<Credentials> credentials_;
  bool credentials_loaded_ = false;
  int retries_ = 4;
  int backoff_ms_ = 500;
};

}  // namespace ptb::detail
