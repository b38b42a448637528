// A robot program's use of ptbundle: open a bundle (verified, the variant
// for this GPU picked), run one part on zeros of its input shapes, and
// print the load and per-call times.
//
//   robot BUNDLE [PART]
#include <cstdio>

#include "ptbundle/robot.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: robot BUNDLE [PART]\n");
    return 2;
  }
  ptb::robot::Options options;
  if (argc > 2) options.part = argv[2];
  auto model = ptb::robot::Model::open(argv[1], options);
  if (!model.ok()) {
    std::fprintf(stderr, "robot: %s\n", model.error().message.c_str());
    return 1;
  }
  const ptb::robot::LoadInfo& info = model->info();
  std::printf("part %s on %s, runtime %s; %zu checks passed; loaded in %.1f ms\n", info.part.c_str(),
              info.gpu.c_str(), info.runtime.c_str(), model->verification().passed, info.total_ms);

  std::vector<ptb::robot::Tensor> inputs;
  for (const ptb::robot::InputSpec& spec : info.inputs) {
    if (!spec.known) {
      std::fprintf(stderr, "robot: the part records no input signature; give it inputs of the right shape\n");
      return 1;
    }
    ptb::robot::Tensor tensor;
    tensor.dtype = spec.dtype;
    tensor.shape = spec.shape;
    size_t count = 1;
    for (int64_t size : spec.shape) count *= static_cast<size_t>(size);
    const size_t item = spec.dtype == 6 || spec.dtype == 3 ? 4 : spec.dtype == 4 || spec.dtype == 7 ? 8 : 2;
    tensor.data.assign(count * item, 0);
    inputs.push_back(std::move(tensor));
  }
  auto outputs = model->run(inputs);
  if (!outputs.ok()) {
    std::fprintf(stderr, "robot: %s\n", outputs.error().message.c_str());
    return 1;
  }
  auto times = model->time(inputs, 10, 100);
  if (!times.ok()) {
    std::fprintf(stderr, "robot: %s\n", times.error().message.c_str());
    return 1;
  }
  std::printf("%zu outputs; median %.1f us, p99 %.1f us per call\n", outputs->size(), times->median_ms * 1000,
              times->p99_ms * 1000);
  return 0;
}
