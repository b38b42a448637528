// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_run(CLI::App& root) {
  root.add_subcommand("run", "(not built yet)");
  return [] { return report(usage_error("'run' is not built yet")); };
}

}  // namespace ptb::app
