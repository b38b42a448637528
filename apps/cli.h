// The command line as the subcommands declare it: a thin layer over CLI11,
// compiled once (cli.cc), so that neither main nor a command file compiles
// CLI11's header (about 1.6 s of each file's compile). It offers what the
// commands use: options of the types their requests hold, flags, --json,
// and one parse that tells main what happened.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ptb::app {

// An option just declared; the setters return it for chaining.
class Option {
 public:
  explicit Option(CLI::Option* option) : option_(option) {}
  Option& required();
  Option& non_negative();
  // The default --help shows (the variable already holds it).
  Option& shown_default(const std::string& text);
  // A repeatable option takes one value each time it is given, so that
  // "--key a.pem REF" leaves REF to the positional argument.
  Option& one_per_use();

 private:
  CLI::Option* option_;
};

// One subcommand: `names` as CLI11 takes them ("-o,--output", "PATH").
class CommandLine {
 public:
  explicit CommandLine(CLI::App* app) : app_(app) {}
  Option option(const std::string& names, std::string& into, const std::string& help);
  Option option(const std::string& names, std::vector<std::string>& into, const std::string& help);
  Option option(const std::string& names, std::optional<double>& into, const std::string& help);
  Option option(const std::string& names, int& into, const std::string& help);
  Option option(const std::string& names, unsigned& into, const std::string& help);
  Option option(const std::string& names, uint64_t& into, const std::string& help);
  Option flag(const std::string& names, bool& into, const std::string& help);
  // --json: main reads whether it was given (json()), on parse errors too.
  void json_flag(const std::string& help);

  const std::string& name() const;
  bool parsed() const;
  bool json() const;
  bool quiet() const;  // -q: every command has it (Cli::add_command)

 private:
  CLI::App* app_;
};

class Cli {
 public:
  Cli(const std::string& description, const std::string& version_line);
  ~Cli();
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  // A subcommand, with -q/--quiet already declared: the same flag, in the
  // same words, on every command.
  CommandLine add_command(const std::string& name, const std::string& description);

  // What parse() did: help or the version was printed (exit with
  // exit_code), the arguments do not parse (error, in CLI11's words with a
  // lower-case start), or a command was parsed.
  struct Parsed {
    bool printed = false;
    int exit_code = 0;
    std::optional<std::string> error;
  };
  Parsed parse(int argc, char** argv);

 private:
  std::unique_ptr<CLI::App> root_;
};

}  // namespace ptb::app
