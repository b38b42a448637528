// Where the runtime modules may be loaded from: code that `run` loads runs
// as the user who runs it, so it comes only from where ptbundle itself is
// installed, never from a folder compiled into the program (a build folder
// that is gone, or that another user can write, would serve whatever is
// planted there), and only from files no other user can have written.
#pragma once

#include <string>
#include <vector>

namespace ptb::detail {

// The folders searched, in order: $PTBUNDLE_RUNTIME_DIR alone when set;
// else the folder of the program holding this code (the executable through
// /proc/self/exe, or the shared library, such as libptbundle.so), then
// ../<libdir>/ptbundle and ../lib/ptbundle beside that folder (the install's
// layout, which the build tree repeats: build/apps/ptbundle and
// build/lib/ptbundle).
std::vector<std::string> runtime_module_folders();

// Empty when the module file at `path` may be loaded: it is a regular file
// (a symlink is followed to its target, which is what is judged), and it
// and the folder holding it are owned by root or by this process's user
// and writable by neither the group nor others. Otherwise why not, as
// "<path>: owned by user 1234, ..." for an error message.
std::string module_refusal(const std::string& path);

}  // namespace ptb::detail
