// NumPy .npy arrays: test-case inputs and expected outputs travel as .npy so
// that people can make and check them with numpy.save / numpy.load.
//
// Read: the "\x93NUMPY" magic, format versions 1.0, 2.0 and 3.0, and the
// Python-literal header dict {'descr', 'fortran_order', 'shape'}. Only
// C-order, little-endian arrays of the dtypes below are accepted, and the
// data that follows the header must hold exactly shape's elements.
//
// dtypes and the ExecuTorch ScalarType numbers they map to:
//   |u1 BYTE=0, |i1 CHAR=1, <i2 SHORT=2, <i4 INT=3, <i8 LONG=4, <f2 HALF=5,
//   <f4 FLOAT=6, <f8 DOUBLE=7, |b1 BOOL=11, <u2 UINT16=27, <u4 UINT32=28,
//   <u8 UINT64=29, 'bfloat16' BFLOAT16=15.
// numpy has no bfloat16 type code; np.save of an ml_dtypes bfloat16 array
// writes '<V2', which loses the type. We write and read the descr
// 'bfloat16' (str() of the ml_dtypes dtype), which np.load resolves when
// ml_dtypes is imported, and refuse '<V2' rather than guess what it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct NpyHeader {
  uint8_t major_version = 0;  // 1, 2 or 3
  uint8_t minor_version = 0;
  std::string descr;          // as written: "<f4", "|b1", "bfloat16"
  int8_t scalar_type = 0;     // ExecuTorch ScalarType number
  uint64_t element_size = 0;  // bytes
  std::vector<uint64_t> shape;
  uint64_t element_count = 0;  // product of shape; 1 for a 0-d array
  uint64_t data_offset = 0;    // where the array bytes start in the file
  uint64_t data_size = 0;      // element_count * element_size
};

// Parses the magic, version and header dict at the start of `bytes` and
// checks that exactly data_size bytes follow. `name` is what errors call it.
Result<NpyHeader> parse_npy_header(Bytes bytes, const std::string& name);

class NpyFile {
 public:
  static Result<NpyFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const MappedFile& file() const { return file_; }
  const NpyHeader& header() const { return header_; }
  // The array's bytes, little-endian, C order; points into the mapping.
  Bytes data() const;

 private:
  MappedFile file_;
  NpyHeader header_;
};

// ScalarType <-> descr, for the dtypes listed above.
std::optional<std::string_view> npy_descr(int8_t scalar_type);
std::optional<int8_t> scalar_type_from_npy_descr(std::string_view descr);

// The magic, version and padded header dict that numpy.save would write for
// such an array (version 1.0 unless the header needs 2.0); data follows it.
Result<std::string> make_npy_header(int8_t scalar_type, std::span<const uint64_t> shape);

// Writes header + data atomically; data must be exactly the shape's size.
Status write_npy(const std::string& path, int8_t scalar_type, std::span<const uint64_t> shape, Bytes data);

}  // namespace ptb
