// ptbundle: package PyTorch models compiled ahead of time for NVIDIA GPUs into
// bundles that can be checked before they are loaded.
#include <fcntl.h>
#include <signal.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "command.h"
#include "ptbundle/base/interrupt.h"

namespace ptb::app {
namespace {

// What the command line names before CLI11 has parsed it, so that a parse
// error can still be reported as the command asked (--json) and name the
// command: the first argument that is not an option, and whether --json is
// among the arguments.
struct Intent {
  std::string word;  // empty: no command given
  bool json = false;
};

Intent read_intent(int argc, char** argv) {
  Intent intent;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (intent.word.empty() && !arg.starts_with("-")) intent.word = arg;
    if (arg == "--json") intent.json = true;
  }
  return intent;
}

// Whether fd 1 can take the report. A closed stdout (`>&-`) is filled with
// /dev/null first: the next file ptbundle opens would otherwise get
// descriptor 1, and the report would be written into it.
bool stdout_usable() {
  int flags = ::fcntl(1, F_GETFL);
  if (flags < 0) {
    int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd >= 0 && null_fd != 1) {
      ::dup2(null_fd, 1);
      ::close(null_fd);
    }
    return false;
  }
  return (flags & O_ACCMODE) != O_RDONLY;
}

std::string command_names(const std::vector<Command>& commands) {
  std::string names;
  for (const Command& command : commands) names += (names.empty() ? "" : ", ") + command.line.name();
  return names;
}

}  // namespace
}  // namespace ptb::app

int main(int argc, char** argv) {
  using namespace ptb::app;
  // Past the file size limit (ulimit -f) a write fails with EFBIG, which
  // the command reports as an I/O error and cleans up after (temporary files,
  // the bundle's lock); SIGXFSZ's default action would kill it first and
  // leave them behind.
  ::signal(SIGXFSZ, SIG_IGN);
  // Checked before any command runs, so that a command never makes a change
  // and then fails to say so (exit 3 after a commit).
  const bool stdout_ok = stdout_usable();
  Cli cli{
      "ptbundle packages PyTorch models compiled ahead of time for NVIDIA GPUs\n"
      "(ExecuTorch .pte/.ptd programs and AOTInductor .pt2 packages) into bundles\n"
      "that are checked before a robot or a server loads them.\n\n"
      "Exit codes: 0 success, 1 invalid input or failed check, 2 usage error, 3 I/O error.\n"
      "See ptbundle(1) and ptbundle-<command>(1).",
      std::string("ptbundle ") + PTB_VERSION};

  const std::vector<Command> commands = {add_export(cli), add_merge(cli), add_verify(cli),
                                         add_inspect(cli), add_run(cli),   add_gpus(cli),
                                         add_sign(cli),   add_tune(cli),  add_push(cli),  add_pull(cli)};
  const Intent intent = read_intent(argc, argv);
  const Command* named = nullptr;
  for (const Command& command : commands) {
    if (command.line.name() == intent.word) named = &command;
  }

  const Cli::Parsed parsed = cli.parse(argc, argv);
  if (parsed.printed) return parsed.exit_code;
  if (parsed.error) {
    Output out(named ? intent.word : "", intent.json);
    if (!named && !intent.word.empty()) {
      return out.fail(ptb::usage_error("unknown command '" + intent.word + "'; see ptbundle --help"));
    }
    if (!named) {
      return out.fail(ptb::usage_error("no command given; expected one of " + command_names(commands) +
                                       "; see ptbundle --help"));
    }
    return out.fail(ptb::usage_error(intent.word + ": " + *parsed.error + "; see ptbundle " + intent.word +
                                     " --help"));
  }
  for (const Command& command : commands) {
    if (!command.line.parsed()) continue;
    Output out(command.line.name(), command.line.json(), command.line.quiet());
    if (!stdout_ok) {
      return out.fail(ptb::io_error("stdout: closed or not open for writing; expected somewhere to write the report "
                                    "(nothing was done)"));
    }
    const int status = command.action(out);
    // A signal that arrived while a commit was renaming files into place
    // waited for it; the change is made, and the exit status says so.
    if (const int signal_number = ptb::interrupted_after_commit()) {
      const char* name = signal_number == SIGINT ? "SIGINT" : signal_number == SIGTERM ? "SIGTERM" : "SIGHUP";
      std::fprintf(stderr, "ptbundle: %s arrived during the commit, which completed first: the change is in place\n", name);
    }
    return status;
  }
  return Output("", false).fail(ptb::usage_error("no command given; see ptbundle --help"));
}
