#include "text_table.h"

#include <algorithm>

namespace ptb::app {
namespace {

// Display width: UTF-8 continuation bytes take no column.
size_t width(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xc0) != 0x80;
  return n;
}

}  // namespace

std::vector<std::string> TextTable::lines(const std::string& indent) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = width(columns_[c].title);
    for (const auto& row : rows_) {
      if (c < row.size()) widths[c] = std::max(widths[c], width(row[c]));
    }
  }
  auto render = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      size_t pad = widths[c] - width(cell);
      bool right = columns_[c].align == Align::Right;
      if (c > 0) line += "  ";
      if (right) line += std::string(pad, ' ');
      line += cell;
      if (!right) line += std::string(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
  };
  std::vector<std::string> out;
  std::vector<std::string> titles;
  for (const auto& column : columns_) titles.push_back(column.title);
  out.push_back(render(titles));
  for (const auto& row : rows_) out.push_back(render(row));
  return out;
}

}  // namespace ptb::app
