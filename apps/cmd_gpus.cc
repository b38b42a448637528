// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_gpus(CLI::App& root) {
  root.add_subcommand("gpus", "(not built yet)");
  return [] { return report(usage_error("'gpus' is not built yet")); };
}

}  // namespace ptb::app
