// The test seams of the CLI, linked only into the tests' `ptbundle_seamed`:
// before main runs, they install libbase's hooks, which read what a test asks
// for from the environment.
//   PTB_TEST_KILL_AT=STEP         the process kills itself with SIGKILL at that
//                                 step of a transaction (test_kill_point), as a
//                                 power cut would; PTB_TEST_KILL_SIGNAL=INT or
//                                 TERM sends that signal instead (Ctrl-C, a
//                                 service stop); STOP holds the process there
//                                 until a SIGCONT, for a test that changes
//                                 files at that very moment.
//   PTB_TEST_SHRINK_AFTER_MAP=NAME the file of that path or last component is
//                                 truncated to nothing right after it is mapped
//                                 (test_shrink_point), as `cp new old` does.
//   PTB_TEST_PROGRESS_EVERY_UPDATE=1 the progress line draws every update at
//                                 once (set_progress_every_update), so that a
//                                 test's small files show one on a terminal.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/mapping_guard.h"
#include "progress.h"
#include "ptbundle/base/test_seams.h"

namespace {

void kill_at(const std::string& step) {
  const char* wanted = std::getenv("PTB_TEST_KILL_AT");
  if (!wanted || step != wanted) return;
  const char* signal_name = std::getenv("PTB_TEST_KILL_SIGNAL");
  int signal_number = SIGKILL;
  if (signal_name && std::strcmp(signal_name, "INT") == 0) signal_number = SIGINT;
  if (signal_name && std::strcmp(signal_name, "TERM") == 0) signal_number = SIGTERM;
  if (signal_name && std::strcmp(signal_name, "STOP") == 0) signal_number = SIGSTOP;
  ::raise(signal_number);
}

void shrink_after_map(const std::string& path) {
  const char* wanted = std::getenv("PTB_TEST_SHRINK_AFTER_MAP");
  if (!wanted || !*wanted) return;
  const std::string name = wanted;
  if (path != name && !path.ends_with("/" + name)) return;
  (void)::truncate(path.c_str(), 0);
}

const bool installed = [] {
  ptb::set_test_kill_hook(&kill_at);
  ptb::set_test_shrink_hook(&shrink_after_map);
  if (const char* every = std::getenv("PTB_TEST_PROGRESS_EVERY_UPDATE"); every && std::strcmp(every, "1") == 0)
    ptb::app::set_progress_every_update(true);
  return true;
}();

}  // namespace
