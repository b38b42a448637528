#include "cli.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>

namespace ptb::app {

// The man pages say the same of -q (man/ptbundle.1 and each command's).
constexpr const char* kQuietHelp = "No notes and no progress line on stderr; errors and warnings still";

Option& Option::required() {
  option_->required();
  return *this;
}

// CLI11's own NonNegativeNumber prints the whole range of a double.
Option& Option::non_negative() {
  option_->check(CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(value >= 0) || value > 1e300) {
          return "expected a number of 0 or more, got '" + text + "'";
        }
        return "";
      },
      "NUMBER >= 0"));
  return *this;
}

Option& Option::shown_default(const std::string& text) {
  option_->default_val(text);
  return *this;
}

Option& Option::one_per_use() {
  option_->allow_extra_args(false);
  return *this;
}

Option CommandLine::option(const std::string& names, std::string& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

Option CommandLine::option(const std::string& names, std::vector<std::string>& into, const std::string& help) {
  CLI::Option* option = app_->add_option(names, into, help);
  // A named option takes one value per flag, repeated for more (--key a.pem
  // --key b.pem): taking all that follow would swallow the positional
  // arguments after it ("verify --key pub.pem B1 B2" would read B1 as a key).
  if (!names.empty() && names.front() == '-') option->allow_extra_args(false)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return Option(option);
}

Option CommandLine::option(const std::string& names, std::optional<double>& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

Option CommandLine::option(const std::string& names, int& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

Option CommandLine::option(const std::string& names, unsigned& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

Option CommandLine::option(const std::string& names, uint64_t& into, const std::string& help) {
  return Option(app_->add_option(names, into, help));
}

Option CommandLine::flag(const std::string& names, bool& into, const std::string& help) {
  return Option(app_->add_flag(names, into, help));
}

void CommandLine::json_flag(const std::string& help) { app_->add_flag("--json", help); }

const std::string& CommandLine::name() const { return app_->get_name(); }

bool CommandLine::parsed() const { return app_->parsed(); }

bool CommandLine::quiet() const {
  const CLI::Option* quiet = app_->get_option_no_throw("--quiet");
  return quiet && quiet->count() > 0;
}

bool CommandLine::json() const {
  const CLI::Option* json = app_->get_option_no_throw("--json");
  return json && json->count() > 0;
}

Cli::Cli(const std::string& description, const std::string& version_line)
    : root_(std::make_unique<CLI::App>(description, "ptbundle")) {
  root_->set_version_flag("--version", version_line);
  root_->require_subcommand(1);
  root_->fallthrough(false);
}

Cli::~Cli() = default;

CommandLine Cli::add_command(const std::string& name, const std::string& description) {
  CLI::App* command = root_->add_subcommand(name, description);
  command->add_flag("-q,--quiet", kQuietHelp);
  return CommandLine(command);
}

Cli::Parsed Cli::parse(int argc, char** argv) {
  Parsed parsed;
  try {
    root_->parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version: exit() prints what was asked
    parsed.printed = true;
    parsed.exit_code = root_->exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's messages start with a capital letter; ours do not.
    std::string message = e.what();
    if (!message.empty()) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    parsed.error = message;
  }
  return parsed;
}

}  // namespace ptb::app
