// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_merge(CLI::App& root) {
  root.add_subcommand("merge", "(not built yet)");
  return [] { return report(usage_error("'merge' is not built yet")); };
}

}  // namespace ptb::app
