// Placeholder until the subcommand's issue lands; replaced wholesale.
#include "command.h"

namespace ptb::app {

Action add_verify(CLI::App& root) {
  root.add_subcommand("verify", "(not built yet)");
  return [] { return report(usage_error("'verify' is not built yet")); };
}

}  // namespace ptb::app
