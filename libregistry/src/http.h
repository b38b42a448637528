// One HTTP exchange through libcurl, and nothing of registries: the request,
// where its body comes from (a string, or a byte range of a file read with
// pread so no file is held in memory), where the response body goes (a
// bounded string, or a sink called with each piece as it arrives), and the
// transport's limits (connect timeout, a low-speed floor against a server
// that drips bytes). One handle per connection, reused, so that keep-alive
// saves a TCP and TLS setup per blob. Redirects are never followed here: the
// registry client decides per request whether one may be.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb::detail {

struct HttpLimits {
  long connect_timeout_s = 30;
  // A transfer slower than low_speed_bytes per second for low_speed_time_s
  // seconds is abandoned: $PTBUNDLE_REGISTRY_STALL_SECONDS sets the time.
  long low_speed_bytes = 1024;
  long low_speed_time_s = 30;
};

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // The body: `text`, or `size` bytes of `file_fd` from `file_offset`.
  std::string text;
  int file_fd = -1;
  uint64_t file_offset = 0;
  uint64_t file_size = 0;
  // The response body: given to `sink` piece by piece when set (an error
  // from it ends the transfer), else kept in the response up to max_body
  // bytes (more is an error naming the limit).
  std::function<Status(Bytes)> sink;
  uint64_t max_body = 1 << 20;
  // Called as bytes move (sent or received so far), for progress.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct HttpHeader {
  std::string name;  // lowercase
  std::string value;
};

struct HttpResponse {
  long status = 0;
  std::vector<HttpHeader> headers;  // the final response's, in order
  std::string body;                 // when the request had no sink
  uint64_t body_bytes = 0;          // received, sink or not
  // The first value of `name` (lowercase), or "".
  std::string header(const std::string& name) const;
};

// The transport failed (no response): `retryable` for a connection refused
// or reset, a timeout; not for a sink's error or a body over its limit.
struct HttpFailure {
  Error error;
  bool retryable = false;
};

class HttpConnection {
 public:
  HttpConnection();
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // The response, or why there is none. `what` prefixes errors ("GET https://...").
  bool perform(const HttpRequest& request, const HttpLimits& limits, HttpResponse& response, HttpFailure& failure);

 private:
  void* curl_ = nullptr;
};

// `relative` (a Location header) resolved against `base`; an error when it is
// no http(s) URL.
Result<std::string> resolve_url(const std::string& base, const std::string& relative);
// "https", "localhost:5000" of an absolute URL.
std::string url_scheme(const std::string& url);
std::string url_authority(const std::string& url);

}  // namespace ptb::detail
