// ptbundle: package PyTorch models compiled ahead of time for NVIDIA GPUs into
// bundles that can be checked before they are loaded.
#include <cstdio>
#include <iostream>

#include "command.h"

namespace ptb::app {

int report(const Error& error) {
  std::fprintf(stderr, "ptbundle: error: %s\n", printable(error.message).c_str());
  return static_cast<int>(error.kind);
}

// Strings read from files need not be UTF-8; dump() would throw on them, so
// invalid bytes are replaced with U+FFFD instead.
void print_json(const Json& document) {
  std::cout << document.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

void report_removed_signatures(const std::vector<std::string>& paths) {
  for (const auto& path : paths)
    std::fprintf(stderr, "ptbundle: removed the signature %s: the bundle changed; sign it again (ptbundle sign)\n",
                 printable(path).c_str());
}

std::string human_size(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace ptb::app

int main(int argc, char** argv) {
  using namespace ptb::app;
  CLI::App root{
      "ptbundle packages PyTorch models compiled ahead of time for NVIDIA GPUs\n"
      "(ExecuTorch .pte/.ptd programs and AOTInductor .pt2 packages) into bundles\n"
      "that are checked before a robot or a server loads them.\n\n"
      "Exit codes: 0 success, 1 invalid input or failed check, 2 usage error, 3 I/O error.\n"
      "See ptbundle(1) and ptbundle-<command>(1).",
      "ptbundle"};
  root.set_version_flag("--version", std::string("ptbundle ") + PTB_VERSION);
  root.require_subcommand(1);
  root.fallthrough(false);

  Action actions[] = {add_export(root), add_merge(root), add_verify(root),
                      add_inspect(root), add_run(root), add_gpus(root),
                      add_sign(root)};
  (void)actions;

  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    root.exit(e);
    return static_cast<int>(ptb::ErrorKind::Usage);
  }
  int index = 0;
  for (CLI::App* sub : root.get_subcommands({})) {
    if (sub->parsed()) return actions[index]();
    ++index;
  }
  return static_cast<int>(ptb::ErrorKind::Usage);
}
