// How the ptbundle binary is put together: each subcommand lives in its own
// file (cmd_<name>.cc), adds itself to the command line (cli.h) with its options, and
// returns the action to run once parsing succeeded. An action fills its
// command's report model and prints it through Output (report.h); it returns
// the exit code documented in man/ptbundle.1.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli.h"
#include "report.h"

namespace ptb::app {

using Action = std::function<int(Output&)>;

struct Command {
  CommandLine line;  // the parsed subcommand main dispatches by
  Action action;
};

Command add_inspect(Cli& cli);
Command add_export(Cli& cli);
Command add_merge(Cli& cli);
Command add_verify(Cli& cli);
Command add_run(Cli& cli);
Command add_gpus(Cli& cli);
Command add_sign(Cli& cli);
Command add_tune(Cli& cli);
Command add_push(Cli& cli);
Command add_pull(Cli& cli);

// A writer changed a signed bundle and removed the signature: one line each on stderr.
void report_removed_signatures(Output& out, const std::vector<std::string>& paths);

}  // namespace ptb::app
