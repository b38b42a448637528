// How the ptbundle binary is put together: each subcommand lives in its own
// file (cmd_<name>.cc), adds itself to the CLI11 app with its options, and
// returns the action to run once parsing succeeded. An action fills its
// command's report model and prints it through Output (report.h); it returns
// the exit code documented in man/ptbundle.1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "report.h"

namespace ptb::app {

using Action = std::function<int(Output&)>;

struct Command {
  CLI::App* app = nullptr;  // the parsed subcommand main dispatches by
  Action action;
};

// --json: main reads whether it was given (Output::json()), on parse errors too.
inline CLI::Option* add_json_flag(CLI::App* command, const std::string& description) {
  return command->add_flag("--json", description);
}

Command add_inspect(CLI::App& root);
Command add_export(CLI::App& root);
Command add_merge(CLI::App& root);
Command add_verify(CLI::App& root);
Command add_run(CLI::App& root);
Command add_gpus(CLI::App& root);
Command add_sign(CLI::App& root);

// A writer changed a signed bundle and removed the signature: one line each on stderr.
void report_removed_signatures(const std::vector<std::string>& paths);

}  // namespace ptb::app
