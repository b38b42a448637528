// SIGINT, SIGTERM and SIGHUP while ptbundle writes (temp_cleanup.cc): the
// handler removes every registered temporary and re-raises the signal. Beside
// register_temp_path (file.h), which names a path:
//  - register_temp_at names a file by its folder's descriptor and its name,
//    so that a temporary whose full path is longer than PATH_MAX is removed
//    too (the descriptor must stay open until unregister_temp_path);
//  - DeferInterrupts holds such a signal back while a commit renames its
//    files into place: the commit then finishes (or rolls back) as one step,
//    and the signal is acted on when the outermost DeferInterrupts ends.
#pragma once

#include <string>

namespace ptb {

// Returns a slot for unregister_temp_path, or -1 when the table is full or
// the name is longer than NAME_MAX.
int register_temp_at(int dir_fd, const std::string& name);

class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;
  // The change the outermost section protects is in place. A signal held
  // back is then not acted on when the section ends: stopping with 130 or
  // 143 would say the command failed after it succeeded. The command
  // finishes and reports what it did; interrupted_after_commit() says which
  // signal came, for a line on stderr. A later signal stops it as usual.
  void committed();
};

// The signal (SIGINT, SIGTERM or SIGHUP) that arrived during a commit which
// then completed, or 0.
int interrupted_after_commit();

}  // namespace ptb
