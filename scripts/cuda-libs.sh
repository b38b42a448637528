# Sourced by the scripts/gpu-* scripts: cuBLASLt and cuDNN for the built-in
# runtime's shims, the CUDA toolkit's when it has them, else those PyTorch's
# wheel brought (site-packages/nvidia/*/lib), which the runtime is pointed at
# as a user would point it (PTBUNDLE_CUBLAS_DIR, PTBUNDLE_CUDNN_DIR; see
# ptbundle(1), ENVIRONMENT). nvcc joins PATH from /usr/local/cuda/bin.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
nvidia_libs=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) if nvidia.__file__ else list(nvidia.__path__)[0])' 2>/dev/null || true)
for pair in "libcudnn.so.9 PTBUNDLE_CUDNN_DIR" "libcublasLt.so.13 PTBUNDLE_CUBLAS_DIR"; do
  read -r lib variable <<<"$pair"
  if [ ! -e "/usr/local/cuda/lib64/$lib" ] && [ -n "$nvidia_libs" ]; then
    found=$(find "$nvidia_libs" -name "$lib" 2>/dev/null | head -1)
    if [ -n "$found" ]; then
      export "$variable=$(dirname "$found")"
      export LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  fi
done
