#include "registry_client.h"
#include "environment.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"
#include "ptbundle/signing/model_signature.h"  // base64_encode

namespace ptb::detail {
namespace {

constexpr int kMaxRedirects = 5;
constexpr uint64_t kMaxErrorBody = 64 << 10;

std::string percent_encode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// key="value" pairs of a challenge after its scheme word.
std::vector<std::pair<std::string, std::string>> challenge_params(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = 0;
  while (i < text.size() && out.size() < 16) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    const size_t eq = text.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string key(text.substr(i, eq - i));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    i = eq + 1;
    std::string value;
    if (i < text.size() && text[i] == '"') {
      ++i;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        value += text[i++];
      }
      ++i;
    } else {
      while (i < text.size() && text[i] != ',') value += text[i++];
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

std::string with_query(const std::string& url, const std::string& query) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

bool is_redirect(long status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

}  // namespace

const char* upload_action_name(UploadAction action) {
  switch (action) {
    case UploadAction::Existing: return "existing";
    case UploadAction::Mounted: return "mounted";
    case UploadAction::Uploaded: return "uploaded";
  }
  return "uploaded";
}

RegistryClient::RegistryClient(RegistryClient&&) noexcept = default;
RegistryClient& RegistryClient::operator=(RegistryClient&&) noexcept = default;
RegistryClient::~RegistryClient() = default;

Result<RegistryClient> RegistryClient::open(const Reference& ref, const RegistryOptions& options, bool push) {
  RegistryClient client;
  client.ref_ = ref;
  client.options_ = options;
  client.push_ = push;
  const bool plain = options.plain_http || is_loopback_registry(ref.registry);
  client.base_ = std::string(plain ? "http://" : "https://") + ref.registry;
  client.authority_ = url_authority(client.base_);
  client.connection_ = std::make_unique<HttpConnection>();
  const RegistryEnvironment environment = registry_environment();
  client.limits_.low_speed_time_s = environment.stall_seconds;
  client.retries_ = environment.retries;
  client.backoff_ms_ = environment.backoff_ms;
  return client;
}

std::string RegistryClient::url(const std::string& path) const {
  return path.starts_with("/") ? base_ + path : path;
}

Error RegistryClient::status_error(const HttpRequest& request, const HttpResponse& response) const {
  std::string where = request.url;
  if (where.starts_with(base_)) where = where.substr(base_.size());
  std::string message = ref_.registry + ": " + request.method + " " + clipped(where, 160) + ": HTTP " +
                        std::to_string(response.status);
  std::string details;
  if (auto json = parse_json_bounded(response.body, "error", "the Distribution API's error document", 8);
      json.ok() && json->is_object() && json->contains("errors") && (*json)["errors"].is_array()) {
    size_t shown = 0;
    for (const auto& e : (*json)["errors"]) {
      if (!e.is_object() || ++shown > 8) break;
      const std::string code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>() : "?";
      const std::string text = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
      details += (details.empty() ? "" : "; ") + clipped(code, 64) + ": " + clipped(text, 200);
    }
  } else if (!response.body.empty()) {
    details = clipped(response.body, 200);
  }
  if (!details.empty()) message += ": " + details;
  // What the status means for the user.
  if (response.status == 401 || response.status == 403) {
    message += credentials_ ? "; the credentials from " + credentials_->source + " were refused"
                            : "; no credentials for " + ref_.registry +
                                  " in docker's config.json (DOCKER_CONFIG; `docker login` writes them)";
  }
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  return response.status == 401 || response.status == 403 || response.status >= 500 || response.status == 429
             ? io_error(message)
             : invalid(message);
}

Status RegistryClient::authenticate(const HttpResponse& challenge, const std::string& extra_scope) {
  const std::string header = challenge.header("www-authenticate");
  const std::string what = ref_.registry + ": authentication";
  if (!credentials_loaded_) {
    credentials_loaded_ = true;
    PTB_TRY(credentials_, find_credentials(ref_.registry));
  }
  std::string scheme = header.substr(0, header.find(' '));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto basic = [&]() -> std::string {
    const std::string pair = credentials_->username + ":" + credentials_->password;
    return "Basic " + base64_encode(Bytes(reinterpret_cast<const uint8_t*>(pair.data()), pair.size()));
  };
  if (scheme == "basic") {
    if (!credentials_)
      return io_error(what + ": the registry asks for a user name and password; none for " + ref_.registry +
                      " in docker's config.json (DOCKER_CONFIG; `docker login` writes them)");
    authorization_ = basic();
    return {};
  }
  if (scheme != "bearer")
    return io_error(what + ": unsupported challenge " + in_quotes(header) + "; expected Bearer or Basic");
  std::string realm, service, scope;
  for (const auto& [key, value] : challenge_params(std::string_view(header).substr(scheme.size()))) {
    if (key == "realm") realm = value;
    else if (key == "service") service = value;
    else if (key == "scope") scope = value;
  }
  if (realm.empty()) return io_error(what + ": the Bearer challenge names no realm: " + in_quotes(header));
  if (scope.empty()) scope = "repository:" + ref_.repository + (push_ ? ":pull,push" : ":pull");
  const std::string realm_scheme = url_scheme(realm);
  if (realm_scheme != "https" &&
      !(realm_scheme == "http" && (options_.plain_http || is_loopback_registry(url_authority(realm)))))
    return io_error(what + ": the token realm " + in_quotes(realm) + " is not https");
  std::string token_url = realm;
  if (!service.empty()) token_url = with_query(token_url, "service=" + percent_encode(service));
  for (const std::string& s : {scope, extra_scope})
    if (!s.empty()) token_url = with_query(token_url, "scope=" + percent_encode(s));
  HttpRequest request;
  request.url = token_url;
  if (credentials_) request.headers.push_back("Authorization: " + basic());
  HttpResponse response;
  HttpFailure failure;
  if (!connection_->perform(request, limits_, response, failure)) return failure.error;
  if (response.status != 200) {
    HttpRequest shown = request;
    return status_error(shown, response);
  }
  PTB_TRY(auto json, parse_json_bounded(response.body, what + " token", "a JSON object with a token", 8));
  std::string token;
  for (const char* key : {"token", "access_token"})
    if (json.is_object() && json.contains(key) && json[key].is_string()) token = json[key].get<std::string>();
  if (token.empty() || token.size() > 65536 || token.find_first_of("\r\n") != std::string::npos)
    return io_error(what + ": the token endpoint's answer has no usable token or access_token");
  authorization_ = "Bearer " + token;
  return {};
}

Result<HttpResponse> RegistryClient::send(HttpRequest request, const std::string& extra_scope) {
  request.url = url(request.url);
  const bool same_host = url_authority(request.url) == authority_;
  bool authenticated_now = false;
  int attempt = 0;
  for (;;) {
    HttpRequest sent = request;
    if (same_host && !authorization_.empty()) sent.headers.push_back("Authorization: " + authorization_);
    HttpResponse response;
    HttpFailure failure;
    const bool ok = connection_->perform(sent, limits_, response, failure);
    const bool delivered = request.sink && response.body_bytes > 0;
    if (!ok) {
      if (!failure.retryable || delivered || attempt >= retries_) {
        if (failure.retryable && attempt > 0)
          failure.error.message += " (after " + std::to_string(attempt) + " retries)";
        return failure.error;
      }
    } else if (response.status == 401 && same_host && !authenticated_now && !response.header("www-authenticate").empty()) {
      PTB_CHECK(authenticate(response, extra_scope));
      authenticated_now = true;
      continue;
    } else if ((response.status == 429 || response.status >= 500) && !delivered && attempt < retries_) {
      // retried below
    } else {
      return response;
    }
    long wait_ms = static_cast<long>(backoff_ms_) << std::min(attempt, 10);
    if (ok) {
      const std::string after = response.header("retry-after");
      char* end = nullptr;
      const long seconds = std::strtol(after.c_str(), &end, 10);
      if (!after.empty() && *end == 0 && seconds >= 0 && seconds <= 30) wait_ms = std::max(wait_ms, seconds * 1000);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    ++attempt;
  }
}

Result<bool> RegistryClient::blob_exists(const std::string& digest) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = "/v2/" + ref_.repository + "/blobs/" + digest;
  PTB_TRY(auto response, send(request));
  if (response.status == 200) return true;
  if (response.status == 404) return false;
  // Some registries answer a HEAD of a blob with a redirect to its store: it exists.
  if (is_redirect(response.status)) return true;
  return status_error(request, response);
}

Result<UploadAction> RegistryClient::put_blob(const BlobBody& body, const std::string& digest,
                                              const std::vector<std::string>& mount_from, uint64_t chunk,
                                              const std::function<void(uint64_t, uint64_t)>& progress) {
  PTB_TRY(bool exists, blob_exists(digest));
  if (exists) return UploadAction::Existing;
  const std::string uploads = "/v2/" + ref_.repository + "/blobs/uploads/";
  std::string location;
  for (const auto& from : mount_from) {
    HttpRequest request;
    request.method = "POST";
    request.url = uploads + "?mount=" + digest + "&from=" + from;
    PTB_TRY(auto response, send(request, "repository:" + from + ":pull"));
    if (response.status == 201) return UploadAction::Mounted;
    if (response.status != 202) return status_error(request, response);
    location = response.header("location");  // the registry declined the mount and opened an upload
    if (!location.empty()) break;
  }
  if (location.empty()) {
    HttpRequest request;
    request.method = "POST";
    request.url = uploads;
    PTB_TRY(auto response, send(request));
    if (response.status != 202) return status_error(request, response);
    location = response.header("location");
  }
  if (location.empty()) return io_error(ref_.registry + ": POST " + uploads + ": the answer has no Location header");
  const uint64_t size = body.fd >= 0 ? body.size : body.text.size();
  PTB_TRY(location, resolve_url(base_ + "/", location));
  auto part = [&](uint64_t offset, uint64_t length) {
    HttpRequest request;
    if (body.fd >= 0) {
      request.file_fd = body.fd;
      request.file_offset = body.offset + offset;
      request.file_size = length;
    } else {
      request.text = body.text.substr(offset, length);
    }
    if (progress) request.progress = [&, offset](uint64_t done, uint64_t) { progress(offset + done, size); };
    request.headers.push_back("Content-Type: application/octet-stream");
    return request;
  };
  uint64_t offset = 0;
  if (size > chunk) {
    while (offset < size) {
      const uint64_t length = std::min(chunk, size - offset);
      HttpRequest request = part(offset, length);
      request.method = "PATCH";
      request.url = location;
      request.headers.push_back("Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
      PTB_TRY(auto response, send(request));
      if (response.status != 202) return status_error(request, response);
      const std::string next = response.header("location");
      if (next.empty()) return io_error(ref_.registry + ": PATCH: the answer has no Location header");
      PTB_TRY(location, resolve_url(location, next));
      offset += length;
    }
  }
  HttpRequest request = offset < size ? part(0, size) : HttpRequest{};
  request.method = "PUT";
  request.url = with_query(location, "digest=" + digest);
  if (offset >= size) request.headers.push_back("Content-Type: application/octet-stream");
  PTB_TRY(auto response, send(request));
  if (response.status != 201) return status_error(request, response);
  const std::string answered = response.header("docker-content-digest");
  if (!answered.empty() && answered != digest)
    return invalid(ref_.registry + ": the registry stored the blob as " + in_quotes(answered) + "; expected " + digest);
  return UploadAction::Uploaded;
}

Result<std::string> RegistryClient::put_manifest(const std::string& body, const std::string& name,
                                                 const std::string& media_type) {
  HttpRequest request;
  request.method = "PUT";
  request.url = "/v2/" + ref_.repository + "/manifests/" + name;
  request.text = body;
  request.headers.push_back("Content-Type: " + media_type);
  PTB_TRY(auto response, send(request));
  if (response.status != 201 && response.status != 200) return status_error(request, response);
  return response.header("docker-content-digest");
}

Result<FetchedManifest> RegistryClient::get_manifest(const std::string& name, uint64_t max_bytes) {
  HttpRequest request;
  request.url = "/v2/" + ref_.repository + "/manifests/" + name;
  request.headers.push_back(std::string("Accept: ") + kOciManifestMediaType + ", application/vnd.oci.image.index.v1+json;q=0.5");
  request.max_body = max_bytes;
  PTB_TRY(auto response, send(request));
  if (response.status != 200) {
    if (is_redirect(response.status))
      return invalid(ref_.registry + ": GET " + request.url +
                     ": redirected; a manifest must come from the registry itself");
    return status_error(request, response);
  }
  FetchedManifest out;
  out.body = std::move(response.body);
  out.content_type = response.header("content-type");
  out.digest_header = response.header("docker-content-digest");
  return out;
}

Status RegistryClient::get_blob(const std::string& digest, const std::function<Status(Bytes)>& sink,
                                const std::function<void(uint64_t, uint64_t)>& progress) {
  HttpRequest request;
  request.url = url("/v2/" + ref_.repository + "/blobs/" + digest);
  request.sink = sink;
  request.progress = progress;
  for (int hop = 0;; ++hop) {
    PTB_TRY(auto response, send(request));
    if (response.status == 200) return {};
    if (!is_redirect(response.status)) return status_error(request, response);
    if (hop >= kMaxRedirects)
      return invalid(ref_.registry + ": GET blob " + digest + ": more than " + std::to_string(kMaxRedirects) + " redirects");
    PTB_TRY(std::string next, resolve_url(request.url, response.header("location")));
    // A blob may be served from another host (object stores); never over
    // plain HTTP from an HTTPS registry, and never with our credentials
    // (send() adds them only for the registry's own host).
    if (url_scheme(next) == "http" && url_scheme(request.url) == "https")
      return invalid(ref_.registry + ": GET blob " + digest + ": redirected from https to plain http (" + clipped(next) + ")");
    request.url = next;
  }
}

}  // namespace ptb::detail
