/* ptbundle's C interface: the robot API (ptbundle/robot.h) for programs in
 * C and for language bindings (Python's ptbundle module sits on it through
 * ctypes; ROS 2 nodes, Rust). The same library, libptbundle.so.
 *
 *   ptb_options* options = ptb_options_new();
 *   ptb_options_set(options, "part", "policy");
 *   ptb_options_add_key(options, "/etc/robot/bundle.pub");
 *   ptb_options_set(options, "require_signature", "true");
 *   ptb_model* model = NULL;
 *   if (ptb_model_open("bundle/", options, &model) != PTB_OK)
 *     fprintf(stderr, "%s\n", ptb_last_error());
 *   ...
 *   ptb_model_run(model, inputs, 2, outputs, 1, NULL);
 *   ptb_model_free(model);
 *   ptb_options_free(options);
 *
 * Errors: every call that can fail returns a ptb_status (0 on success, else
 * the exit-code class of ptbundle(1): 1 invalid input or failed check, 2
 * misuse, 3 I/O), and ptb_last_error() gives its one-line message, kept per
 * thread until that thread's next failing call. No call aborts or throws on
 * bad arguments; a NULL handle is an error like any other.
 *
 * Tensors are DLPack's (dlpack.h, Debian's libdlpack-dev): inputs and outputs
 * are DLTensors the caller owns, in host memory (kDLCPU, contiguous) or on
 * the model's GPU (kDLCUDA), read and written in place, with no copy on the
 * GPU. The library never frees or keeps them past the call.
 *
 * Threads and runtimes: as robot.h says. One handle is used by one thread at
 * a time; the first runtime loaded serves the whole process. */
#ifndef PTBUNDLE_PTBUNDLE_H
#define PTBUNDLE_PTBUNDLE_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTB_ABI_VERSION 1

typedef int ptb_status;
#define PTB_OK 0
#define PTB_INVALID 1
#define PTB_USAGE 2
#define PTB_IO 3

typedef struct ptb_options ptb_options;
typedef struct ptb_model ptb_model;

/* PTB_ABI_VERSION of the library loaded: a binding checks it equals its own. */
int ptb_abi_version(void);

/* The message of this thread's last failed call; "" when none failed. */
const char* ptb_last_error(void);

/* Open options, as ptb::robot::Options; defaults as there. */
ptb_options* ptb_options_new(void);
void ptb_options_free(ptb_options* options);
/* name: "part", "method", "device", "runtime" ("auto", "builtin",
 * "libtorch"), "verify", "require_signature", "staged_upload",
 * "cuda_graphs", "use_tune_file" ("true" or "false"), "seed" (decimal). */
ptb_status ptb_options_set(ptb_options* options, const char* name, const char* value);
/* A trusted public key: a path to a PEM or DER file, or the PEM text. */
ptb_status ptb_options_add_key(ptb_options* options, const char* key);

/* Opens one part of a bundle, checked (see robot.h), on the GPU. *model is
 * set only on success. */
ptb_status ptb_model_open(const char* bundle, const ptb_options* options, ptb_model** model);
void ptb_model_free(ptb_model* model);

size_t ptb_model_num_inputs(const ptb_model* model);
size_t ptb_model_num_outputs(const ptb_model* model);

/* What was loaded, as a JSON object: part, method, gpu {index, name, sm,
 * memory_bytes}, runtime, signature {state, file, key_fingerprint, key},
 * verification {passed, failed, skipped}, load times, and "inputs" and
 * "outputs": [{name, known, dtype, shape, dynamic: [{dim, min, max}]}]
 * (dtype a PyTorch name). Free it with ptb_string_free. */
ptb_status ptb_model_describe(const ptb_model* model, char** json);

/* A look into a bundle without a GPU (ptb::robot::Bundle::open): the same
 * JSON as ptb_model_describe's inputs and outputs, for every part and
 * method: {path, signature, parts: [{name, source, gpu_targets,
 * has_testcase, methods: [{name, inputs, outputs}]}]}. Options: keys and
 * require_signature. */
ptb_status ptb_bundle_describe(const char* bundle, const ptb_options* options, char** json);

void ptb_string_free(char* text);

/* One call. Every tensor is checked against the method first (count,
 * dtype, shape, device, strides, room) and a wrong one is refused naming
 * it. Device tensors: run in order on `stream` (a cudaStream_t; NULL: the
 * model's own stream), nothing synchronized. Host tensors: done when the
 * call returns; `stream` must be NULL. */
ptb_status ptb_model_run(ptb_model* model, const DLTensor* inputs, size_t num_inputs, const DLTensor* outputs,
                         size_t num_outputs, void* stream);

/* ptb_model_run `iterations` times back to back from C, the host time per
 * call in seconds in *seconds (nothing synchronized: with device tensors,
 * the time to enqueue): what a caller in C pays per call, for bindings to
 * measure their own overhead against. */
ptb_status ptb_model_run_timed(ptb_model* model, const DLTensor* inputs, size_t num_inputs, const DLTensor* outputs,
                               size_t num_outputs, void* stream, int iterations, double* seconds);

#ifdef __cplusplus
}
#endif

#endif /* PTBUNDLE_PTBUNDLE_H */
