// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_inspect(CLI::App& root) {
  root.add_subcommand("inspect", "(not built yet)");
  return [] { return report(usage_error("'inspect' is not built yet")); };
}

}  // namespace ptb::app
