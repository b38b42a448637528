// The numbering family of the shim table: device types, dtypes, layouts
// and memory formats. The numbers are c10's (engines/tensor.h): a library
// compiled against any PyTorch since 2.6 asks for them by name and compares
// with what it gets.
#include "engines/tensor.h"
#include "shims/shims.h"

using namespace ptb;
using namespace ptb::builtin;

int32_t aoti_torch_device_type_cpu() { return kDeviceCpu; }
int32_t aoti_torch_device_type_cuda() { return kDeviceCuda; }
int32_t aoti_torch_device_type_meta() { return kDeviceMeta; }
int32_t aoti_torch_device_type_xpu() { return kDeviceXpu; }
int32_t aoti_torch_device_type_mps() { return kDeviceMps; }
int32_t aoti_torch_device_type_privateuse1() { return kDevicePrivateUse1; }

int32_t aoti_torch_dtype_float8_e5m2() { return ScalarType::Float8_e5m2; }
int32_t aoti_torch_dtype_float8_e4m3fn() { return ScalarType::Float8_e4m3fn; }
int32_t aoti_torch_dtype_float8_e5m2fnuz() { return ScalarType::Float8_e5m2fnuz; }
int32_t aoti_torch_dtype_float8_e4m3fnuz() { return ScalarType::Float8_e4m3fnuz; }
int32_t aoti_torch_dtype_bfloat16() { return ScalarType::BFloat16; }
int32_t aoti_torch_dtype_float16() { return ScalarType::Half; }
int32_t aoti_torch_dtype_float32() { return ScalarType::Float; }
int32_t aoti_torch_dtype_float64() { return ScalarType::Double; }
int32_t aoti_torch_dtype_uint8() { return ScalarType::Byte; }
int32_t aoti_torch_dtype_uint16() { return ScalarType::UInt16; }
int32_t aoti_torch_dtype_uint32() { return ScalarType::UInt32; }
int32_t aoti_torch_dtype_uint64() { return ScalarType::UInt64; }
int32_t aoti_torch_dtype_int8() { return ScalarType::Char; }
int32_t aoti_torch_dtype_int16() { return ScalarType::Short; }
int32_t aoti_torch_dtype_int32() { return ScalarType::Int; }
int32_t aoti_torch_dtype_int64() { return ScalarType::Long; }
int32_t aoti_torch_dtype_bool() { return ScalarType::Bool; }
int32_t aoti_torch_dtype_complex32() { return ScalarType::ComplexHalf; }
int32_t aoti_torch_dtype_complex64() { return ScalarType::ComplexFloat; }
int32_t aoti_torch_dtype_complex128() { return ScalarType::ComplexDouble; }
size_t aoti_torch_dtype_element_size(int32_t dtype) { return scalar_type_size(dtype).value_or(0); }

int32_t aoti_torch_layout_strided() { return kLayoutStrided; }
int32_t aoti_torch_layout_sparse_coo() { return kLayoutSparseCoo; }
int32_t aoti_torch_layout_sparse_csr() { return kLayoutSparseCsr; }
int32_t aoti_torch_layout_sparse_csc() { return kLayoutSparseCsc; }
int32_t aoti_torch_layout_sparse_bsr() { return kLayoutSparseBsr; }
int32_t aoti_torch_layout_sparse_bsc() { return kLayoutSparseBsc; }
int32_t aoti_torch_layout__mkldnn() { return kLayoutMkldnn; }
int32_t aoti_torch_layout_jagged() { return kLayoutJagged; }

int32_t aoti_torch_memory_format_contiguous_format() { return kContiguousFormat; }
int32_t aoti_torch_memory_format_channels_last() { return kChannelsLast; }
int32_t aoti_torch_memory_format_channels_last_3d() { return kChannelsLast3d; }
int32_t aoti_torch_memory_format_preserve_format() { return kPreserveFormat; }
