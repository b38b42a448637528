#include "http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "ptbundle/base/text.h"

namespace ptb::detail {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  uint64_t sent = 0;
  std::optional<Error> sink_error;
  bool over_limit = false;
  bool read_failed = false;
  std::string read_error;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->response->body_bytes += n;
  if (t->request->sink) {
    if (auto status = t->request->sink(Bytes(reinterpret_cast<const uint8_t*>(data), n)); !status.ok()) {
      t->sink_error = status.error();
      return 0;  // ends the transfer (CURLE_WRITE_ERROR)
    }
    return n;
  }
  if (t->response->body.size() + n > t->request->max_body) {
    t->over_limit = true;
    return 0;
  }
  t->response->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {
    t->response->headers.clear();  // a new response (after 100 Continue)
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || t->response->headers.size() >= 256) return n;
  HttpHeader header;
  header.name = std::string(line.substr(0, colon));
  std::transform(header.name.begin(), header.name.end(), header.name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  header.value = std::string(value.substr(0, 8192));
  t->response->headers.push_back(std::move(header));
  return n;
}

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& r = *t->request;
  const uint64_t total = r.file_fd >= 0 ? r.file_size : r.text.size();
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size * count, total - t->sent));
  if (n == 0) return 0;
  if (r.file_fd < 0) {
    std::memcpy(buffer, r.text.data() + t->sent, n);
  } else {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(r.file_fd, buffer + done, n - done, static_cast<off_t>(r.file_offset + t->sent + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        t->read_failed = true;
        t->read_error = got < 0 ? std::strerror(errno) : "the file is shorter than the bytes verified";
        return CURL_READFUNC_ABORT;
      }
      done += static_cast<size_t>(got);
    }
  }
  t->sent += n;
  return n;
}

int on_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (t->request->progress) {
    if (ultotal > 0) t->request->progress(static_cast<uint64_t>(ulnow), static_cast<uint64_t>(ultotal));
    else t->request->progress(static_cast<uint64_t>(dlnow), static_cast<uint64_t>(dltotal));
  }
  return 0;
}

bool retryable_code(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& h : headers)
    if (h.name == name) return h.value;
  return {};
}

HttpConnection::HttpConnection() {
  global_init();
  curl_ = curl_easy_init();
}

HttpConnection::~HttpConnection() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool HttpConnection::perform(const HttpRequest& request, const HttpLimits& limits, HttpResponse& response,
                             HttpFailure& failure) {
  const std::string what = request.method + " " + clipped(request.url);
  CURL* curl = static_cast<CURL*>(curl_);
  if (!curl) {
    failure = {io_error(what + ": cannot start libcurl"), false};
    return false;
  }
  curl_easy_reset(curl);  // keeps the connection cache
  response = HttpResponse{};
  Transfer t;
  t.request = &request;
  t.response = &response;

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, limits.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, limits.low_speed_bytes);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, limits.low_speed_time_s);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, nullptr);  // blobs arrive as stored: their digest is of those bytes
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "ptbundle");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  if (request.progress) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  }

  const bool has_body = request.file_fd >= 0 || !request.text.empty();
  const uint64_t body_size = request.file_fd >= 0 ? request.file_size : request.text.size();
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "POST" && !has_body) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
  } else if (request.method == "PUT" || request.method == "PATCH" || request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_size));
    if (request.method != "PUT") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip before each body
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) {
    if (t.sink_error) {
      failure = {*t.sink_error, false};
    } else if (t.over_limit) {
      failure = {invalid(what + ": the response is larger than " + std::to_string(request.max_body) +
                         " bytes; expected at most " + std::to_string(request.max_body >> 20) + " MiB"),
                 false};
    } else if (t.read_failed) {
      failure = {io_error(what + ": cannot read the body: " + t.read_error), false};
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
      failure = {io_error(what + ": the transfer stalled (under " + std::to_string(limits.low_speed_bytes) +
                          " bytes/s for " + std::to_string(limits.low_speed_time_s) +
                          " s, PTBUNDLE_REGISTRY_STALL_SECONDS) or the connection timed out"),
                 true};
    } else {
      failure = {io_error(what + ": " + curl_easy_strerror(code)), retryable_code(code)};
    }
    return false;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return true;
}

Result<std::string> resolve_url(const std::string& base, const std::string& relative) {
  CURLU* url = curl_url();
  if (!url) return io_error("cannot start libcurl's URL parser");
  std::string out;
  if (curl_url_set(url, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(url, CURLUPART_URL, relative.c_str(), 0) == CURLUE_OK) {
    char* text = nullptr;
    if (curl_url_get(url, CURLUPART_URL, &text, 0) == CURLUE_OK) {
      out = text;
      curl_free(text);
    }
  }
  curl_url_cleanup(url);
  if (out.empty() || !(out.starts_with("http://") || out.starts_with("https://")))
    return invalid("the Location " + in_quotes(relative) + " is no http(s) URL");
  return out;
}

std::string url_scheme(const std::string& url) {
  const size_t colon = url.find("://");
  return colon == std::string::npos ? std::string() : url.substr(0, colon);
}

std::string url_authority(const std::string& url) {
  const size_t start = url.find("://");
  if (start == std::string::npos) return {};
  std::string rest = url.substr(start + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  std::transform(rest.begin(), rest.end(), rest.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return rest;
}

}  // namespace ptb::detail
