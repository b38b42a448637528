/* A shared object that imports what a link_libtorch=False AOTInductor
   library imports from its host (some aoti_torch_* shims and the CUDA
   runtime): the built-in runtime serves it. Never run, only read. */
extern int aoti_torch_empty_strided();
extern int aoti_torch_get_data_ptr();
extern int aoti_torch_delete_tensor_object();
extern int cudaMalloc();
extern int cudaMemcpy();

int ptb_test_entry(void) {
  return aoti_torch_empty_strided() + aoti_torch_get_data_ptr() + aoti_torch_delete_tensor_object() + cudaMalloc() +
         cudaMemcpy();
}
