// Where the runtime modules come from (libcuda/src/module_folders.h): only
// where the program is installed, or PTBUNDLE_RUNTIME_DIR, and only files
// that neither another user nor the group can have written.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "ptbundle/cuda/runtime_choice.h"
#include "src/module_folders.h"
#include "src/runtime_modules.h"
#include "support.h"

using namespace ptb;
using ptb::test::contains;
using ptb::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A file named as the built-in runtime module, planted in `folder`.
fs::path plant(const fs::path& folder) {
  const fs::path module = folder / "libptbundle_builtin_runtime.so";
  std::ofstream(module) << "not a module";
  fs::permissions(module, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  return module;
}

// detail::runtime_module(Builtin) in a child process (it loads at most once
// per process, and a loaded module would stay in this one), with `env_dir`
// as PTBUNDLE_RUNTIME_DIR when not empty. Returns the child's verdict: its
// exit code is 0 when loaded, 1 when refused; `message` gets the error.
int load_in_child(const std::string& env_dir, std::string& message) {
  TempDir scratch;
  const fs::path out = scratch / "message";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (env_dir.empty()) ::unsetenv("PTBUNDLE_RUNTIME_DIR");
    else ::setenv("PTBUNDLE_RUNTIME_DIR", env_dir.c_str(), 1);
    auto loaded = detail::runtime_module(AotiRuntime::Builtin);
    std::ofstream(out) << (loaded.ok() ? std::string() : loaded.error().message);
    ::_exit(loaded.ok() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  message = ptb::test::read_text(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("runtime modules: searched beside the program and in its ../lib/ptbundle, never a compiled-in folder") {
  ::unsetenv("PTBUNDLE_RUNTIME_DIR");
  const std::vector<std::string> folders = detail::runtime_module_folders();
  REQUIRE_FALSE(folders.empty());
  // This test program is build/tests/ptbundle_tests: its folder, then build/lib/ptbundle.
  const fs::path self = fs::read_symlink("/proc/self/exe");
  CHECK(folders.front() == self.parent_path().string());
  CHECK(std::find(folders.begin(), folders.end(), (self.parent_path().parent_path() / "lib" / "ptbundle").string()) !=
        folders.end());
  for (const std::string& folder : folders) {
    CAPTURE(folder);
    CHECK(folder.rfind(self.parent_path().parent_path().string(), 0) == 0);  // under the build folder
  }
  ::setenv("PTBUNDLE_RUNTIME_DIR", "/somewhere/else", 1);
  CHECK(detail::runtime_module_folders() == std::vector<std::string>{"/somewhere/else"});
  ::unsetenv("PTBUNDLE_RUNTIME_DIR");
}

TEST_CASE("runtime modules: a module planted in a folder others can write is refused, naming it and why") {
  TempDir dir;
  const fs::path folder = dir / "planted";
  fs::create_directory(folder);
  const fs::path module = plant(folder);
  ::chmod(folder.c_str(), 0777);
  std::string why = detail::module_refusal(module.string());
  CHECK(contains(why, folder.string()));
  CHECK(contains(why, "writable by every user"));
  ::chmod(folder.c_str(), 01777);  // sticky, as /tmp: still anyone's to add files to
  CHECK(contains(detail::module_refusal(module.string()), "writable by every user"));
  ::chmod(folder.c_str(), 0775);
  CHECK(contains(detail::module_refusal(module.string()), "writable by its group"));
  ::chmod(folder.c_str(), 0755);
  CHECK(detail::module_refusal(module.string()).empty());
  ::chmod(module.c_str(), 0666);
  why = detail::module_refusal(module.string());
  CHECK(contains(why, module.string()));
  CHECK(contains(why, "module is writable by every user"));
  ::chmod(module.c_str(), 0644);
  // A link to a module elsewhere is judged by what it points at.
  const fs::path open_folder = dir / "open";
  fs::create_directory(open_folder);
  const fs::path target = plant(open_folder);
  ::chmod(open_folder.c_str(), 0777);
  fs::create_symlink(target, folder / "link.so");
  CHECK(contains(detail::module_refusal((folder / "link.so").string()), "writable by every user"));
}

TEST_CASE("runtime modules: PTBUNDLE_RUNTIME_DIR pointing at a world-writable folder is refused before anything is loaded") {
  if (!kBuiltinRuntimeBuilt) {
    ptb::test::skip("this build has no built-in runtime to load");
    return;
  }
  TempDir dir;
  const fs::path folder = dir / "planted";
  fs::create_directory(folder);
  plant(folder);
  ::chmod(folder.c_str(), 0777);
  std::string message;
  CHECK(load_in_child(folder.string(), message) == 1);
  CHECK(contains(message, "refusing to load the runtime module"));
  CHECK(contains(message, folder.string()));
  CHECK(contains(message, "writable by every user"));
}

TEST_CASE("runtime modules: the module the build put beside the program's ../lib/ptbundle loads") {
  if (!kBuiltinRuntimeBuilt) {
    ptb::test::skip("this build has no built-in runtime to load");
    return;
  }
  const fs::path built = fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "lib" / "ptbundle" /
                         "libptbundle_builtin_runtime.so";
  REQUIRE(fs::exists(built));
  CHECK(detail::module_refusal(built.string()).empty());
  std::string message;
  CHECK_MESSAGE(load_in_child("", message) == 0, message);
}
