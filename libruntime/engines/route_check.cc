// Reading two results back to compare them (route_check.h).
#include "engines/route_check.h"
#include "engines/settings.h"

#include <cmath>
#include <cstdlib>
#include <vector>

namespace ptb::builtin {
namespace {

std::optional<std::vector<double>> host_values(const Tensor& t) {
  Tensor host;
  host.sizes = t.sizes;
  host.strides = contiguous_strides(t.sizes);
  host.dtype = ScalarType::Double;
  auto storage = allocate(static_cast<uint64_t>(t.numel()) * 8, kDeviceCpu, 0);
  if (!storage) return std::nullopt;
  host.storage = std::move(*storage);
  if (!copy_elements(host, t).ok()) return std::nullopt;
  const double* data = static_cast<const double*>(host.data());
  return std::vector<double>(data, data + t.numel());
}

}  // namespace

std::optional<Agreement> compare(const Tensor& candidate, const Tensor& reference) {
  if (candidate.sizes != reference.sizes) return std::nullopt;
  auto mine = host_values(candidate);
  auto theirs = host_values(reference);
  if (!mine || !theirs) return std::nullopt;
  Agreement agreement;
  for (size_t i = 0; i < mine->size(); ++i) {
    const double difference = std::abs((*mine)[i] - (*theirs)[i]);
    // NaN anywhere is a disagreement, not a difference of 0.
    agreement.difference = difference == difference ? std::max(agreement.difference, difference) : INFINITY;
    agreement.largest = std::max(agreement.largest, std::abs((*theirs)[i]));
  }
  return agreement;
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;  // unknown: take no chances
  }
  return status != cudaStreamCaptureStatusNone;
}

bool tracing() { return settings().trace_shims; }

}  // namespace ptb::builtin
