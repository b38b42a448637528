// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_export(CLI::App& root) {
  root.add_subcommand("export", "(not built yet)");
  return [] { return report(usage_error("'export' is not built yet")); };
}

}  // namespace ptb::app
