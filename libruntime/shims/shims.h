// The C ABI an AOTInductor library built with aot_inductor.link_libtorch=False
// calls into its host for (torch/csrc/inductor/aoti_torch/c/shim.h, PyTorch
// 2.6 to 2.11, and generated/c_shim_cuda.h for the ATen fallbacks), declared
// in our words: only the functions this runtime provides, one declaration
// for each row of the shim table (ptbundle/kernels/aoti_shim_table.inc).
// Handles are opaque pointers; here each AtenTensorHandle is a
// ptb::builtin::Tensor (engines/tensor.h). Errors are int32 codes, 0 for success; the
// reason of a failure is printed on stderr, as LibTorch's shims do.
#pragma once

#include <cstddef>
#include <cstdint>

#define PTB_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;
using AOTITorchError = int32_t;
struct CUDAGuardOpaque;
using CUDAGuardHandle = CUDAGuardOpaque*;
struct CUDAStreamGuardOpaque;
using CUDAStreamGuardHandle = CUDAStreamGuardOpaque*;
struct DeviceGuardOpaque;
using DeviceGuardHandle = DeviceGuardOpaque*;

inline constexpr AOTITorchError kShimSuccess = 0;
inline constexpr AOTITorchError kShimFailure = 1;

// Device types, dtypes, layouts and memory formats.
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_cpu();
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_cuda();
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_meta();
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_xpu();
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_mps();
PTB_SHIM_EXPORT int32_t aoti_torch_device_type_privateuse1();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2fnuz();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fnuz();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_bfloat16();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float16();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float32();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_float64();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_uint8();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_uint16();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_uint32();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_uint64();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_int8();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_int16();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_int32();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_int64();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_bool();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_complex32();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_complex64();
PTB_SHIM_EXPORT int32_t aoti_torch_dtype_complex128();
PTB_SHIM_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype);
PTB_SHIM_EXPORT int32_t aoti_torch_layout_strided();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_sparse_coo();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_sparse_csr();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_sparse_csc();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_sparse_bsr();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_sparse_bsc();
PTB_SHIM_EXPORT int32_t aoti_torch_layout__mkldnn();
PTB_SHIM_EXPORT int32_t aoti_torch_layout_jagged();
PTB_SHIM_EXPORT int32_t aoti_torch_memory_format_contiguous_format();
PTB_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last();
PTB_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last_3d();
PTB_SHIM_EXPORT int32_t aoti_torch_memory_format_preserve_format();

// Autograd is never on in an AOTInductor library's host: the library saves
// and restores the flag around its run.
PTB_SHIM_EXPORT bool aoti_torch_grad_mode_is_enabled();
PTB_SHIM_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);
PTB_SHIM_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);
PTB_SHIM_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);

// Tensors.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                                                        int32_t dtype, int32_t device_type, int32_t device_index,
                                                        AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes,
                                                                  const int64_t* strides, int64_t storage_offset,
                                                                  int32_t dtype, int32_t device_type,
                                                                  int32_t device_index, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides, int64_t storage_offset, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig, AtenTensorHandle* ret);
// A view of self's storage; offset_increment is added to self's own storage
// offset, as ATen's _reinterpret_tensor adds it.
PTB_SHIM_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                              const int64_t* sizes, const int64_t* strides,
                                                              int64_t offset_increment, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes,
                                                     const int64_t* strides, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype,
                                                           int64_t ndim, const int64_t* sizes, const int64_t* strides,
                                                           AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self);

// Getters. Sizes and strides are borrowed: valid while the tensor lives.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_mutable_data_ptr(AtenTensorHandle tensor, void** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_const_data_ptr(AtenTensorHandle tensor, const void** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret);

// Streams and devices.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                   CUDAStreamGuardHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_create_device_guard(int32_t device_index, DeviceGuardHandle* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_delete_device_guard(DeviceGuardHandle guard);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_device_guard_set_index(DeviceGuardHandle guard, int32_t device_index);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_get_current_device_index(int32_t* ret);

// Random numbers (shims/random.cc). Generators are not passed: the runtime's own
// (engines/random_state.h) serves every draw.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high,
                                                               const int64_t* size, int64_t size_len);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low(int64_t low, int64_t high, const int64_t* size,
                                                           int64_t size_len, int32_t* dtype, int32_t* layout,
                                                           int32_t* device, int32_t device_index,
                                                           int32_t* pin_memory, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand(const int64_t* size, int64_t size_len, int32_t* dtype,
                                                    int32_t* layout, int32_t* device, int32_t device_index,
                                                    int32_t* pin_memory, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn(const int64_t* size, int64_t size_len, int32_t* dtype,
                                                     int32_t* layout, int32_t* device, int32_t device_index,
                                                     int32_t* pin_memory, AtenTensorHandle* ret0);

// Matrix products on cuBLASLt (shims/gemm.cc), as ATen's mm.out, addmm.out,
// bmm.out, baddbmm.out and _addmm_activation compute them.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat2);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                         double alpha);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                           double beta, double alpha);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
                                                                 AtenTensorHandle mat2, double beta, double alpha,
                                                                 int32_t use_gelu, AtenTensorHandle* ret0);

// Convolution on cuDNN (shims/convolution.cc), as ATen's convolution computes it.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                                           AtenTensorHandle* bias, const int64_t* stride,
                                                           int64_t stride_len, const int64_t* padding,
                                                           int64_t padding_len, const int64_t* dilation,
                                                           int64_t dilation_len, int32_t transposed,
                                                           const int64_t* output_padding, int64_t output_padding_len,
                                                           int64_t groups, AtenTensorHandle* ret0);

// Scaled dot-product attention for inference (shims/attention.cc), with the
// outputs ATen's entry points return: output, log-sum-exp, and the
// sequence, philox and debug outputs, empty or null where inference has none.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);

// A tensor's one element on the host (shims/scalar.cc), converted to the
// type asked for as ATen's item<T>() converts it. A GPU tensor is read back,
// so the call waits for its stream: a method that calls one is not
// captured into a CUDA graph. float16 and bfloat16 travel as their bits.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, uint16_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_float32(AtenTensorHandle tensor, float* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_float64(AtenTensorHandle tensor, double* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_uint8(AtenTensorHandle tensor, uint8_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_uint16(AtenTensorHandle tensor, uint16_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_uint32(AtenTensorHandle tensor, uint32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_uint64(AtenTensorHandle tensor, uint64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_int8(AtenTensorHandle tensor, int8_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_int16(AtenTensorHandle tensor, int16_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_int32(AtenTensorHandle tensor, int32_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_int64(AtenTensorHandle tensor, int64_t* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, uint16_t* ret);

// Sorting on CUB's segmented sort (shims/sort.cc): every row along `dim` sorted,
// stable, NaN above everything else; topk keeps the first k of each row.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                           int32_t descending, AtenTensorHandle* ret0,
                                                           AtenTensorHandle* ret1);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                    int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

// Indexing (shims/index.cc): advanced indexing with integer and boolean index
// tensors (a None is a null handle), index_put with or without
// accumulation, scatter with its reductions, and nonzero. A boolean index
// and nonzero size their output from the data, so they wait for the stream.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                            int64_t indices_len, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                         int64_t indices_len, AtenTensorHandle values,
                                                         int32_t accumulate, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self,
                                                        const AtenTensorHandle* indices, const uint32_t num_indices,
                                                        const AtenTensorHandle values, bool accumulate);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               int64_t dim, AtenTensorHandle index,
                                                               AtenTensorHandle src);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                 int64_t dim, AtenTensorHandle index, double value);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                      int64_t dim, AtenTensorHandle index,
                                                                      AtenTensorHandle src, const char* reduce,
                                                                      int32_t include_self);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_scatter_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                      AtenTensorHandle index, AtenTensorHandle src);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_scatter_reduce_out(AtenTensorHandle out, AtenTensorHandle self,
                                                             int64_t dim, AtenTensorHandle index,
                                                             AtenTensorHandle src, const char* reduce,
                                                             int32_t include_self);

// Weight-only int4 matrix product (shims/quantized.cc): x [m, k] bfloat16 times the
// weights _convert_weight_to_int4pack packed for the tensor cores
// ([n/8, k/(tiles*16), 32, tiles/2] int32), dequantized per group of k
// with scales_and_zeros [k/group, n, 2] bfloat16: w = (q - 8) * scale + zero.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                                   int64_t qGroupSize,
                                                                   AtenTensorHandle qScaleAndZeros,
                                                                   AtenTensorHandle* ret0);

// Weight-only products on ExecuTorch's plain layouts (shims/quantized.cc,
// kernels/plain_layout.h): x [m, k] bfloat16 times the weights of n rows, packed 4,
// 5, 6 or 8 bits a weight with per-group scales (and zeros), into a new
// [m, n] bfloat16 tensor.
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int4_plain_mm(AtenTensorHandle self, AtenTensorHandle qdata,
                                                             AtenTensorHandle scale, AtenTensorHandle scale_step,
                                                             AtenTensorHandle zero, AtenTensorHandle zero_point_step,
                                                             int64_t group_size, AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int5_plain_mm(AtenTensorHandle self, AtenTensorHandle ql,
                                                             AtenTensorHandle qh, AtenTensorHandle scale,
                                                             AtenTensorHandle scale_step, AtenTensorHandle zero,
                                                             AtenTensorHandle zero_point_step, int64_t group_size,
                                                             AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int6_plain_mm(AtenTensorHandle self, AtenTensorHandle ql,
                                                             AtenTensorHandle qh, AtenTensorHandle scale,
                                                             AtenTensorHandle steps, int64_t group_size,
                                                             AtenTensorHandle* ret0);
PTB_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int8_plain_mm(AtenTensorHandle self, AtenTensorHandle qdata,
                                                             AtenTensorHandle scale, AtenTensorHandle zero,
                                                             int64_t group_size, AtenTensorHandle* ret0);
