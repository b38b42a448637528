// The hooks behind libbase's test points: test_kill_point (base/file.h),
// where writers may be stopped before each rename of a transaction, and
// test_shrink_point (base/mapping_guard.h), where a file may be changed right
// after it is mapped. Nothing in the shipped binaries installs one, so both
// points do nothing there; tests/seams/ installs them in the tests' CLI.
#pragma once

#include <string>

namespace ptb {

using TestKillHook = void (*)(const std::string& step);
void set_test_kill_hook(TestKillHook hook);

using TestShrinkHook = void (*)(const std::string& path);
void set_test_shrink_hook(TestShrinkHook hook);

}  // namespace ptb
