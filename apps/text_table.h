// Columns for people, as llvm-readobj prints them: every column as wide as
// its widest cell, numbers right-aligned, two spaces between columns, no
// trailing blanks.
#pragma once

#include <string>
#include <vector>

namespace ptb::app {

class TextTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string title;
    Align align = Align::Left;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // The header line and one line per row, each prefixed by `indent`.
  std::vector<std::string> lines(const std::string& indent) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ptb::app
