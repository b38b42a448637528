/* As imports_builtin.c, plus two ATen fallbacks the built-in runtime does
   not provide: SDPA's efficient attention and a cuBLAS matmul. */
extern int aoti_torch_empty_strided();
extern int aoti_torch_cuda__scaled_dot_product_efficient_attention();
extern int aoti_torch_cuda_mm_out();
extern int cudaMalloc();

int ptb_test_entry(void) {
  return aoti_torch_empty_strided() + aoti_torch_cuda__scaled_dot_product_efficient_attention() +
         aoti_torch_cuda_mm_out() + cudaMalloc();
}
