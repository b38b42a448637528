// docker-registry (the CNCF distribution registry) serving 127.0.0.1 from a
// storage folder of its own, and the child processes it runs as: one
// starter for the registry tests and the registry benchmark, which need the
// same real server. Independent of doctest: a registry that does not start
// throws, with its log.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ptb::test {

// A port on the loopback interface that nothing listens on now.
inline int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_loopback_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!bound) throw std::runtime_error("free_loopback_port: cannot bind a loopback port");
  return ntohs(addr.sin_port);
}

inline bool loopback_port_open(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// A child process whose stdout and stderr go to `log`, stopped (SIGTERM,
// then waited for) when this goes.
class ServerChild {
 public:
  ServerChild(std::vector<std::string> argv, const std::filesystem::path& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    const int spawned = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(spawned));
  }
  ~ServerChild() { stop(SIGTERM); }
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;
  pid_t pid() const { return pid_; }
  // Its exit status (128 + signal when killed); -1 when already waited for.
  int stop(int signal) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    return wait();
  }
  int wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
};

// docker-registry serving 127.0.0.1:<port> from `dir` (its config.yml,
// storage/ and log), with deletes enabled.
class LocalRegistry {
 public:
  explicit LocalRegistry(const std::filesystem::path& dir) : port_(free_loopback_port()) {
    std::ofstream(dir / "config.yml") << "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                                         "storage:\n  filesystem:\n    rootdirectory: "
                                      << (dir / "storage").string()
                                      << "\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:" << port_ << "\n";
    child_ = std::make_unique<ServerChild>(
        std::vector<std::string>{"docker-registry", "serve", (dir / "config.yml").string()}, dir / "log");
    for (int i = 0; i < 200 && !loopback_port_open(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!loopback_port_open(port_)) {
      std::ostringstream log;
      log << std::ifstream(dir / "log").rdbuf();
      throw std::runtime_error("docker-registry did not start (scripts/install-deps --test installs it): " + log.str());
    }
  }
  int port() const { return port_; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  std::unique_ptr<ServerChild> child_;
};

}  // namespace ptb::test
