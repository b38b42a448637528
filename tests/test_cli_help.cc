// Every option a subcommand's --help lists is in its man page
// (man/ptbundle-<command>.1) and in ptbundle(1)'s synopsis, and the synopsis
// lists no option the command lacks: a new flag fails here until both pages
// say it.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>

#include "support.h"

namespace {

const char* const kCommands[] = {"export", "merge", "verify", "sign", "inspect", "run", "gpus", "push", "pull", "tune"};

// The long options (--name) in `text`, --help left out.
std::set<std::string> long_options(const std::string& text) {
  static const std::regex option(R"((^|[^-\w])(--[a-z0-9][a-z0-9-]*))");
  std::set<std::string> found;
  for (std::sregex_iterator it(text.begin(), text.end(), option), end; it != end; ++it) found.insert((*it)[2]);
  found.erase("--help");
  return found;
}

// A man page's text with roff's escaped hyphens made plain ("\-\-part" ->
// "--part"), and font escapes (\fB, \fI, \fR, \fP) removed.
std::string roff_plain(std::string text) {
  text = std::regex_replace(text, std::regex(R"(\\f[BIRP])"), "");
  text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
  return text;
}

std::string page(const std::string& name) {
  return roff_plain(ptb::test::read_text(ptb::test::fs::path(PTB_SOURCE_DIR) / "man" / name));
}

// The lines of ptbundle(1)'s synopsis for `command`: from ".B <command>"
// to the next ".br".
std::string synopsis_of(const std::string& command) {
  const std::string text = page("ptbundle.1");
  const std::size_t start = text.find(".SH SYNOPSIS");
  const std::size_t stop = text.find(".SH ", start + 1);
  REQUIRE(start != std::string::npos);
  const std::string synopsis = text.substr(start, stop - start);
  const std::string head = "\n.B " + command + "\n";
  const std::size_t at = synopsis.find(head);
  if (at == std::string::npos) return "";
  const std::size_t end = synopsis.find("\n.br", at);
  return synopsis.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

TEST_CASE("cli help: every option of every command is in its man page and in ptbundle(1)'s synopsis") {
  for (const std::string command : kCommands) {
    CAPTURE(command);
    const ptb::test::CommandResult help = ptb::test::run_cli(command + " --help");
    REQUIRE(help.exit_code == 0);
    const std::set<std::string> options = long_options(help.out);
    const bool has_options = !options.empty();
    CHECK_MESSAGE(has_options, "no options found in `ptbundle " << command << " --help`");

    const std::string man_page = page("ptbundle-" + command + ".1");
    const std::string synopsis = synopsis_of(command);
    CHECK_MESSAGE(!synopsis.empty(), "ptbundle(1)'s SYNOPSIS has no `.B " << command << "` entry");
    for (const std::string& option : options) {
      CHECK_MESSAGE(long_options(man_page).count(option) == 1,
                    option << " (ptbundle " << command << " --help) is not in man/ptbundle-" << command << ".1");
      CHECK_MESSAGE(long_options(synopsis).count(option) == 1,
                    option << " (ptbundle " << command << " --help) is not in ptbundle(1)'s synopsis of " << command);
    }
    for (const std::string& option : long_options(synopsis)) {
      CHECK_MESSAGE(options.count(option) == 1,
                    option << " is in ptbundle(1)'s synopsis of " << command << " but not in its --help");
    }
  }
}

TEST_CASE("cli help: every command takes -q/--quiet, described in the same words in --help and its man page") {
  const std::string words = "No notes and no progress line on stderr; errors and warnings still";
  for (const std::string command : kCommands) {
    CAPTURE(command);
    const ptb::test::CommandResult help = ptb::test::run_cli(command + " --help");
    REQUIRE(help.exit_code == 0);
    CHECK(ptb::test::contains(help.out, "-q,--quiet"));
    CHECK(ptb::test::contains(help.out, words));
    const std::string man_page = page("ptbundle-" + command + ".1");
    CHECK_MESSAGE(ptb::test::contains(man_page, ".BR -q \", \" --quiet\n" + words + "."),
                  "man/ptbundle-" << command << ".1 does not describe -q as --help does");
    CHECK(ptb::test::contains(synopsis_of(command), ".RB [ -q \" | \" --quiet ]"));
  }
}
