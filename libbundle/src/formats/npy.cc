#include "ptbundle/formats/npy.h"

#include <array>
#include <cstring>

#include "ptbundle/base/dtype.h"

namespace ptb {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr uint64_t kPreambleV1 = 10;  // magic, 2 version bytes, uint16 length
constexpr uint64_t kPreambleV2 = 12;  // magic, 2 version bytes, uint32 length
// numpy pads headers so the data starts on a 64-byte boundary; header dicts
// longer than this are not something numpy writes for the dtypes we accept.
constexpr uint64_t kMaxHeaderLength = 1 << 20;
constexpr size_t kMaxDims = 64;

struct DtypeRow {
  std::string_view descr;
  int8_t scalar_type;
  uint64_t size;
};

// numpy cannot name bfloat16: arrays of ml_dtypes.bfloat16 are saved as
// 2-byte raw values ("<V2"), which is what users have. They are read as
// bfloat16 and so accepted only where a method takes bfloat16; "bfloat16"
// stays first so that writers name the dtype.
constexpr std::array<DtypeRow, 15> kDtypes = {{
    {"|u1", 0, 1},
    {"|i1", 1, 1},
    {"<i2", 2, 2},
    {"<i4", 3, 4},
    {"<i8", 4, 8},
    {"<f2", 5, 2},
    {"<f4", 6, 4},
    {"<f8", 7, 8},
    {"|b1", 11, 1},
    {"bfloat16", 15, 2},
    {"<V2", 15, 2},
    {"|V2", 15, 2},
    {"<u2", 27, 2},
    {"<u4", 28, 4},
    {"<u8", 29, 8},
}};

const DtypeRow* find_dtype(std::string_view descr) {
  for (const auto& row : kDtypes)
    if (row.descr == descr) return &row;
  return nullptr;
}

// A cursor over the Python literal that numpy writes with repr(): a dict of
// str keys to a str, a bool and a tuple of ints. Anything else is refused.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Error fail(const std::string& what) const {
    return invalid(name_ + ": npy header at character " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  Result<std::string> string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return fail("expected a quoted string");
    char quote = text_[pos_++];
    auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    if (value.find('\\') != std::string::npos) return fail("escape sequences are not expected in a descr or key");
    pos_ = end + 1;
    return value;
  }
  Result<bool> bool_literal() {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    return fail("expected True or False");
  }
  Result<uint64_t> int_literal() {
    skip_space();
    size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (value > (UINT64_MAX - digit) / 10) return fail("dimension does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return fail("expected a non-negative dimension");
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long
    return value;
  }
  // "()", "(5,)", "(4, 16)", "(4, 16,)"
  Result<std::vector<uint64_t>> shape_literal() {
    if (!eat('(')) return fail("expected a tuple for 'shape'");
    std::vector<uint64_t> dims;
    while (!eat(')')) {
      if (dims.size() == kMaxDims) return fail("more than " + std::to_string(kMaxDims) + " dimensions");
      PTB_TRY(uint64_t dim, int_literal());
      dims.push_back(dim);
      if (!eat(',')) {
        if (!eat(')')) return fail("expected ',' or ')' in 'shape'");
        if (dims.size() == 1) return fail("a 1-d shape needs a trailing comma, as Python writes it");
        break;
      }
    }
    return dims;
  }

 private:
  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

struct HeaderDict {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

Result<HeaderDict> parse_dict(std::string_view text, const std::string& name) {
  DictParser p(text, name);
  if (!p.eat('{')) return p.fail("expected '{'");
  HeaderDict dict;
  bool seen_descr = false, seen_order = false, seen_shape = false;
  while (!p.eat('}')) {
    PTB_TRY(std::string key, p.string_literal());
    if (!p.eat(':')) return p.fail("expected ':' after '" + key + "'");
    bool* seen = nullptr;
    if (key == "descr") {
      PTB_TRY(dict.descr, p.string_literal());
      seen = &seen_descr;
    } else if (key == "fortran_order") {
      PTB_TRY(dict.fortran_order, p.bool_literal());
      seen = &seen_order;
    } else if (key == "shape") {
      PTB_TRY(dict.shape, p.shape_literal());
      seen = &seen_shape;
    } else {
      return p.fail("unexpected key '" + key + "'; expected only 'descr', 'fortran_order' and 'shape'");
    }
    if (*seen) return p.fail("key '" + key + "' appears twice");
    *seen = true;
    if (!p.eat(',')) {
      if (!p.eat('}')) return p.fail("expected ',' or '}'");
      break;
    }
  }
  if (!p.at_end()) return p.fail("unexpected text after the header dict");
  if (!seen_descr || !seen_order || !seen_shape)
    return p.fail("missing key; expected 'descr', 'fortran_order' and 'shape'");
  return dict;
}

uint32_t read_le(Bytes bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint32_t>(bytes[offset + i]) << (8 * i);
  return value;
}

}  // namespace

std::optional<std::string_view> npy_descr(int8_t scalar_type) {
  for (const auto& row : kDtypes)
    if (row.scalar_type == scalar_type) return row.descr;
  return std::nullopt;
}

std::optional<int8_t> scalar_type_from_npy_descr(std::string_view descr) {
  if (const auto* row = find_dtype(descr)) return row->scalar_type;
  return std::nullopt;
}

Result<NpyHeader> parse_npy_header(Bytes bytes, const std::string& name) {
  if (bytes.size() < kPreambleV1 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0)
    return invalid(name + ": offset 0: not a .npy file; expected the magic \\x93NUMPY and a version");
  NpyHeader header;
  header.major_version = bytes[6];
  header.minor_version = bytes[7];
  if (header.major_version < 1 || header.major_version > 3 || header.minor_version != 0)
    return invalid(name + ": offset 6: npy format version " + std::to_string(header.major_version) + "." +
                   std::to_string(header.minor_version) + "; expected 1.0, 2.0 or 3.0");
  uint64_t preamble = header.major_version == 1 ? kPreambleV1 : kPreambleV2;
  if (bytes.size() < preamble) return invalid(name + ": offset 8: file ends inside the header length");
  uint64_t header_length = read_le(bytes, 8, header.major_version == 1 ? 2 : 4);
  if (header_length > kMaxHeaderLength)
    return invalid(name + ": offset 8: header length " + std::to_string(header_length) + " is larger than " +
                   std::to_string(kMaxHeaderLength));
  if (!range_fits(preamble, header_length, bytes.size()))
    return invalid(name + ": offset " + std::to_string(preamble) + ": header of " + std::to_string(header_length) +
                   " bytes extends past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  // Versions 1 and 2 are latin-1 and 3 is UTF-8; every character we accept
  // is ASCII, so any other byte fails the parse below either way.
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + preamble), header_length);
  PTB_TRY(HeaderDict dict, parse_dict(text, name));

  const DtypeRow* dtype = find_dtype(dict.descr);
  if (!dtype) {
    std::string why = !dict.descr.empty() && dict.descr[0] == '>' ? " (big-endian data is not supported)" : "";
    return invalid(name + ": header key 'descr': dtype '" + dict.descr + "' is not supported" + why +
                   "; expected one of <f4 <f8 <f2 bfloat16 <V2 (bfloat16 saved by ml_dtypes) |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1");
  }
  if (dict.fortran_order)
    return invalid(name + ": header key 'fortran_order': True is not supported; expected a C-order array");

  const std::optional<uint64_t> elements = element_count(dict.shape);
  if (!elements) return invalid(name + ": header key 'shape': the element count overflows 64 bits");
  const uint64_t count = *elements;
  if (count > UINT64_MAX / dtype->size)
    return invalid(name + ": header key 'shape': the data size overflows 64 bits");

  header.descr = dict.descr;
  header.scalar_type = dtype->scalar_type;
  header.element_size = dtype->size;
  header.shape = std::move(dict.shape);
  header.element_count = count;
  header.data_offset = preamble + header_length;
  header.data_size = count * dtype->size;
  uint64_t available = bytes.size() - header.data_offset;
  if (available != header.data_size)
    return invalid(name + ": offset " + std::to_string(header.data_offset) + ": " + std::to_string(available) +
                   " bytes of data follow the header; expected " + std::to_string(header.data_size) + " (" +
                   std::to_string(count) + " elements of " + dict.descr + ")");
  return header;
}

Result<NpyFile> NpyFile::open(const std::string& path) {
  NpyFile npy;
  PTB_TRY(npy.file_, MappedFile::open(path));
  PTB_TRY(npy.header_, parse_npy_header(npy.file_.bytes(), path));
  return npy;
}

Bytes NpyFile::data() const { return file_.bytes().subspan(header_.data_offset, header_.data_size); }

Result<std::string> make_npy_header(int8_t scalar_type, std::span<const uint64_t> shape) {
  auto descr = npy_descr(scalar_type);
  if (!descr) return invalid("npy: ScalarType " + std::to_string(scalar_type) + " has no .npy dtype");
  std::string dict = "{'descr': '" + std::string(*descr) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ",";
  dict += "), }";
  // numpy aligns the data to 64 bytes and ends the header with '\n'.
  uint64_t preamble = kPreambleV1;
  if (dict.size() + 1 + 63 > 0xffff) preamble = kPreambleV2;
  uint64_t total = preamble + dict.size() + 1;
  uint64_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += static_cast<char>(preamble == kPreambleV1 ? 1 : 2);
  out += '\0';
  uint64_t length = dict.size();
  for (uint64_t i = 0; i < preamble - kMagic.size() - 2; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + dict;
}

Status write_npy(const std::string& path, int8_t scalar_type, std::span<const uint64_t> shape, Bytes data) {
  PTB_TRY(std::string header, make_npy_header(scalar_type, shape));
  const std::optional<uint64_t> elements = element_count(shape);
  if (!elements) return invalid(path + ": shape: the element count overflows 64 bits");
  const uint64_t count = *elements;
  // make_npy_header succeeded, so the dtype is in the table.
  const std::optional<uint64_t> bytes = tensor_bytes(shape, scalar_type);
  const uint64_t element_size = find_dtype(*npy_descr(scalar_type))->size;
  if (!bytes || *bytes != data.size())
    return invalid(path + ": data is " + std::to_string(data.size()) + " bytes; expected " +
                   std::to_string(count) + " elements of " + std::to_string(element_size) + " bytes");
  PTB_TRY(AtomicOutput out, AtomicOutput::create(path));
  PTB_CHECK(out.write(Bytes(reinterpret_cast<const uint8_t*>(header.data()), header.size())));
  PTB_CHECK(out.write(data));
  return out.commit();
}

}  // namespace ptb
