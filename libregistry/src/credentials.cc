#include "credentials.h"
#include "environment.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "ptbundle/base/file.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/json.h"
#include "ptbundle/signing/model_signature.h"  // base64_decode

extern char** environ;

namespace ptb::detail {
namespace {

constexpr uint64_t kMaxConfigBytes = 4 << 20;
constexpr size_t kMaxHelperOutput = 1 << 20;

std::string config_path() { return registry_environment().docker_config_path; }

// "https://ghcr.io/v1/" -> "ghcr.io"; "localhost:5000" stays.
std::string host_of_key(std::string key) {
  if (size_t scheme = key.find("://"); scheme != std::string::npos) key = key.substr(scheme + 3);
  return key.substr(0, key.find('/'));
}

bool valid_helper_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
      return false;
  return name.front() != '.';
}

// Runs `docker-credential-<helper> get` with `registry` on stdin, bounded in
// output and time (30 s).
Result<std::optional<Credentials>> run_helper(const std::string& helper, const std::string& registry) {
  const std::string program = "docker-credential-" + helper;
  if (!valid_helper_name(helper))
    return invalid(config_path() + ": credential helper " + in_quotes(helper) + " is no valid helper name");
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return io_error(program + ": cannot make a pipe: " + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return io_error(program + ": cannot make a pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  char get[] = "get";
  std::string path = program;
  char* argv[] = {path.data(), get, nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return io_error(program + ": cannot run the credential helper " + config_path() + " names: " + std::strerror(spawned));
  }
  // The host is a few bytes: the pipe takes it without blocking.
  const std::string input = registry + "\n";
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  (void)!::write(in[1], input.data(), input.size());
  ::sigaction(SIGPIPE, &old, nullptr);
  ::close(in[1]);
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::read(out[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer, static_cast<size_t>(got));
    if (output.size() > kMaxHelperOutput) break;
  }
  ::close(out[0]);
  if (timed_out || output.size() > kMaxHelperOutput) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return io_error(program + " get: no answer within 30 s");
  if (output.size() > kMaxHelperOutput) return invalid(program + " get: more than 1 MiB of output");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // Helpers answer "credentials not found in native keychain" and exit 1 for an unknown host.
    if (output.find("not found") != std::string::npos) return std::optional<Credentials>{};
    return io_error(program + " get: failed for " + registry + ": " + clipped(output));
  }
  PTB_TRY(auto json, parse_json_bounded(output, program + " get", "a JSON object with Username and Secret", 8));
  if (!json.is_object() || !json.contains("Secret") || !json["Secret"].is_string())
    return invalid(program + " get: the answer has no string Secret; expected {\"Username\": ..., \"Secret\": ...}");
  Credentials c;
  c.username = json.contains("Username") && json["Username"].is_string() ? json["Username"].get<std::string>() : "";
  c.password = json["Secret"].get<std::string>();
  c.source = program;
  if (c.username == "<token>")
    return invalid(program + ": the credentials for " + registry +
                   " are an identity token (OAuth refresh token), which ptbundle does not support; log in with a "
                   "user name and password or an access token");
  return std::optional<Credentials>(std::move(c));
}

}  // namespace

Result<std::optional<Credentials>> find_credentials(const std::string& registry) {
  const std::string path = config_path();
  if (path.empty()) return std::optional<Credentials>{};
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<Credentials>{};
    return io_error(path + ": cannot open: " + std::strerror(errno));
  }
  PTB_TRY(auto file, MappedFile::from_fd(fd, path));
  if (file.size() > kMaxConfigBytes) return invalid(path + ": larger than 4 MiB; expected a docker config.json");
  std::string_view text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  PTB_TRY(auto json, parse_json_bounded(text, path, "a docker config.json object", 16));
  if (!json.is_object()) return invalid(path + ": expected a JSON object (docker's config.json)");

  if (json.contains("credHelpers") && json["credHelpers"].is_object()) {
    for (const auto& [key, value] : json["credHelpers"].items()) {
      if (host_of_key(key) == registry && value.is_string()) return run_helper(value.get<std::string>(), registry);
    }
  }
  if (json.contains("auths") && json["auths"].is_object()) {
    for (const auto& [key, value] : json["auths"].items()) {
      if (host_of_key(key) != registry || !value.is_object()) continue;
      Credentials c;
      c.source = path + " auths." + key;
      if (value.contains("auth") && value["auth"].is_string() && !value["auth"].get<std::string>().empty()) {
        PTB_TRY(auto decoded, base64_decode(value["auth"].get<std::string>(), path + ": auths." + key + ".auth"));
        std::string pair(decoded.begin(), decoded.end());
        const size_t colon = pair.find(':');
        if (colon == std::string::npos)
          return invalid(path + ": auths." + key + ".auth: decodes to no \"user:password\"");
        c.username = pair.substr(0, colon);
        c.password = pair.substr(colon + 1);
        return std::optional<Credentials>(std::move(c));
      }
      if (value.contains("username") && value["username"].is_string() && value.contains("password") &&
          value["password"].is_string()) {
        c.username = value["username"].get<std::string>();
        c.password = value["password"].get<std::string>();
        return std::optional<Credentials>(std::move(c));
      }
      if (value.contains("identitytoken"))
        return invalid(path + ": auths." + key +
                       " holds an identity token (OAuth refresh token), which ptbundle does not support");
      // An empty entry: docker's way of saying the credentials are in credsStore.
    }
  }
  if (json.contains("credsStore") && json["credsStore"].is_string())
    return run_helper(json["credsStore"].get<std::string>(), registry);
  return std::optional<Credentials>{};
}

}  // namespace ptb::detail
