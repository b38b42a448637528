/* A robot program in C: open one part of a bundle (checked: with a key, its
 * signature must verify), then run it once on zeros in host memory, the
 * inputs and outputs as DLPack tensors the program owns.
 *
 *   robot_c BUNDLE [PART [PUBLIC_KEY.pem]]
 *
 * Exit status: 0 ran, 1 refused (the reason on stderr), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptbundle/ptbundle.h"

/* What ptb_model_describe says of input or output `index`, read from its
 * JSON without a JSON library: the dtype must be float32 and the shape is
 * copied into `shape` (at most 8 dimensions). Returns the number of
 * dimensions, or -1. */
static int float32_shape(const char* json, const char* list, size_t index, int64_t shape[8]) {
  const char* at = strstr(json, list);
  for (size_t i = 0; at && i <= index; ++i) at = strstr(at + 1, "\"dtype\"");
  if (!at || strncmp(at, "\"dtype\": \"float32\"", 18) != 0) return -1;
  at = strstr(at, "\"shape\": [");
  if (!at) return -1;
  at += 10;
  int ndim = 0;
  while (*at && *at != ']' && ndim < 8) {
    char* end = NULL;
    shape[ndim++] = strtoll(at, &end, 10);
    at = end;
    while (*at == ',' || *at == ' ' || *at == '\n') ++at;
  }
  return ndim;
}

static size_t elements(const int64_t* shape, int ndim) {
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= (size_t)shape[i];
  return n;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: robot_c BUNDLE [PART [PUBLIC_KEY.pem]]\n");
    return 2;
  }
  ptb_options* options = ptb_options_new();
  if (argc > 2 && ptb_options_set(options, "part", argv[2]) != PTB_OK) goto refused;
  if (argc > 3) {
    if (ptb_options_add_key(options, argv[3]) != PTB_OK) goto refused;
    if (ptb_options_set(options, "require_signature", "true") != PTB_OK) goto refused;
  }
  char* json = NULL;
  if (ptb_bundle_describe(argv[1], options, &json) != PTB_OK) goto refused;
  printf("%s\n", json);
  ptb_string_free(json);

  ptb_model* model = NULL;
  if (ptb_model_open(argv[1], options, &model) != PTB_OK) goto refused;
  if (ptb_model_describe(model, &json) != PTB_OK) goto refused;
  size_t n_in = ptb_model_num_inputs(model), n_out = ptb_model_num_outputs(model);
  if (n_in > 8 || n_out > 8) {
    fprintf(stderr, "robot_c: more than 8 inputs or outputs\n");
    return 1;
  }
  DLTensor inputs[8], outputs[8];
  int64_t shapes[16][8];
  for (size_t i = 0; i < n_in + n_out; ++i) {
    int output = i >= n_in;
    size_t index = output ? i - n_in : i;
    int ndim = float32_shape(json, output ? "\"outputs\"" : "\"inputs\"", index, shapes[i]);
    if (ndim < 0) {
      fprintf(stderr, "robot_c: %s %zu is not a float32 tensor the part describes\n", output ? "output" : "input", index);
      return 1;
    }
    DLTensor* t = output ? &outputs[index] : &inputs[index];
    memset(t, 0, sizeof *t);
    t->data = calloc(elements(shapes[i], ndim) ? elements(shapes[i], ndim) : 1, sizeof(float));
    t->device.device_type = kDLCPU;
    t->ndim = ndim;
    t->dtype.code = kDLFloat;
    t->dtype.bits = 32;
    t->dtype.lanes = 1;
    t->shape = shapes[i];
  }
  ptb_string_free(json);
  if (ptb_model_run(model, inputs, n_in, outputs, n_out, NULL) != PTB_OK) goto refused;
  printf("ran: output 0 starts with %g\n", (double)((float*)outputs[0].data)[0]);
  for (size_t i = 0; i < n_in; ++i) free(inputs[i].data);
  for (size_t i = 0; i < n_out; ++i) free(outputs[i].data);
  ptb_model_free(model);
  ptb_options_free(options);
  return 0;

refused:
  fprintf(stderr, "robot_c: %s\n", ptb_last_error());
  return 1;
}
