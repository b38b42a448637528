# Sourced by scripts/gpu-check and scripts/gpu-zoo on the GPU machine:
# cuBLASLt and cuDNN for the built-in runtime's shims, the toolkit's when it
# has them, else those PyTorch's wheel brought (nvidia/*/lib), which the
# runtime is pointed at the way a user would point it (PTBUNDLE_*_DIR).
nvidia_libs=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) if nvidia.__file__ else list(nvidia.__path__)[0])' 2>/dev/null)
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
