/* As imports_builtin.c, plus two ATen fallbacks the built-in runtime does
   not provide (it runs inference, and has no FFT): SDPA's backward pass and
   a real-to-complex FFT. */
extern int aoti_torch_empty_strided();
extern int aoti_torch_cuda__scaled_dot_product_efficient_attention_backward();
extern int aoti_torch_cuda__fft_r2c();
extern int cudaMalloc();

int ptb_test_entry(void) {
  return aoti_torch_empty_strided() + aoti_torch_cuda__scaled_dot_product_efficient_attention_backward() +
         aoti_torch_cuda__fft_r2c() + cudaMalloc();
}
