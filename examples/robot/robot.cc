// A robot program's use of ptbundle: look into a bundle (no GPU needed),
// open one part checked (with a key, its signature must verify), run it on
// zeros of its input shapes into buffers the program owns, and print the
// load and per-call times.
//
//   robot BUNDLE [PART [PUBLIC_KEY.pem]]
#include <cstdio>

#include "ptbundle/robot.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: robot BUNDLE [PART [PUBLIC_KEY.pem]]\n");
    return 2;
  }
  ptb::robot::Options options;
  if (argc > 2) options.part = argv[2];
  if (argc > 3) {
    options.keys = {argv[3]};
    options.require_signature = true;
  }
  auto bundle = ptb::robot::Bundle::open(argv[1], options);
  if (!bundle.ok()) {
    std::fprintf(stderr, "robot: %s\n", bundle.error().message.c_str());
    return 1;
  }
  std::printf("%zu part(s); signature %s\n", bundle->parts().size(),
              ptb::robot::signature_state_name(bundle->signature().state));

  auto model = ptb::robot::Model::open(argv[1], options);
  if (!model.ok()) {
    std::fprintf(stderr, "robot: %s\n", model.error().message.c_str());
    return 1;
  }
  const ptb::robot::LoadInfo& info = model->info();
  std::printf("part %s on %s (sm_%d), runtime %s; %zu checks passed in %.1f ms; loaded in %.1f ms\n", info.part.c_str(),
              info.gpu.name.c_str(), info.gpu.sm, info.runtime.c_str(), model->verification().passed, info.check_ms,
              info.total_ms);

  std::vector<ptb::robot::Tensor> inputs;
  for (const ptb::robot::TensorInfo& spec : info.inputs) {
    if (!spec.known) {
      std::fprintf(stderr, "robot: the part records no signature for %s; give it inputs of the right shape\n",
                   spec.name.c_str());
      return 1;
    }
    inputs.push_back({spec.dtype, spec.shape, std::vector<uint8_t>(spec.bytes(), 0)});
  }
  // Outputs into buffers the program owns, allocated once.
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<ptb::robot::TensorView> in, out;
  for (ptb::robot::Tensor& tensor : inputs)
    in.push_back({tensor.data.data(), tensor.dtype, tensor.shape, {}, ptb::robot::Memory::Host});
  for (const ptb::robot::TensorInfo& spec : info.outputs) {
    if (!spec.known) {
      std::fprintf(stderr, "robot: the part records no signature for %s\n", spec.name.c_str());
      return 1;
    }
    buffers.emplace_back(spec.bytes());
    out.push_back({buffers.back().data(), spec.dtype, spec.shape, {}, ptb::robot::Memory::Host});
  }
  if (auto ran = model->run(in, out); !ran.ok()) {
    std::fprintf(stderr, "robot: %s\n", ran.error().message.c_str());
    return 1;
  }
  auto times = model->time(inputs, 10, 100);
  if (!times.ok()) {
    std::fprintf(stderr, "robot: %s\n", times.error().message.c_str());
    return 1;
  }
  std::printf("%zu outputs; median %.1f us, p99 %.1f us per call\n", out.size(), times->median_ms * 1000,
              times->p99_ms * 1000);
  return 0;
}
