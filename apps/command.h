// How the ptbundle binary is put together: each subcommand lives in its own
// file (cmd_<name>.cc), adds itself to the CLI11 app with its options, and
// returns the action to run once parsing succeeded. Actions return the exit
// code documented in man/ptbundle.1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "ptbundle/base/result.h"

namespace ptb::app {

using Json = nlohmann::ordered_json;
using Action = std::function<int()>;

Action add_inspect(CLI::App& root);
Action add_export(CLI::App& root);
Action add_merge(CLI::App& root);
Action add_verify(CLI::App& root);
Action add_run(CLI::App& root);
Action add_gpus(CLI::App& root);
Action add_sign(CLI::App& root);

// Prints "ptbundle: error: <message>" on stderr and returns the exit code of
// the error's kind.
int report(const Error& error);

// One JSON document on stdout, with a trailing newline.
void print_json(const Json& document);

// A writer changed a signed bundle and removed the signature: one line each on stderr.
void report_removed_signatures(const std::vector<std::string>& paths);

// "4.0 GiB", "312 B": sizes for people. JSON output always uses bytes.
std::string human_size(uint64_t bytes);

}  // namespace ptb::app
