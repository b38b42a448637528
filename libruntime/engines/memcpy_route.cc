#include "engines/memcpy_route.h"

#include <atomic>
#include <mutex>

namespace ptb::builtin {
namespace {

struct Route {
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  uint64_t min_bytes = 0;
  detail::BlobCopyRoute::Copier copier;
  uint64_t routed = 0;
  std::string failure;
};

std::mutex route_owner;        // held by the live BlobCopyRoute
std::mutex route_state;        // guards `route`'s counters
std::atomic<Route*> active{nullptr};
Route the_route;

bool routed_kind(cudaMemcpyKind kind) { return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDefault; }

}  // namespace

MemcpyRoute::MemcpyRoute(const uint8_t* blob, uint64_t size, uint64_t min_bytes, Copier copier) {
  route_owner.lock();
  std::lock_guard lock(route_state);
  the_route = Route{blob, blob + size, min_bytes, std::move(copier), 0, {}};
  active.store(&the_route, std::memory_order_release);
}

MemcpyRoute::~MemcpyRoute() {
  active.store(nullptr, std::memory_order_release);
  {
    std::lock_guard lock(route_state);
    the_route.copier = nullptr;
  }
  route_owner.unlock();
}

uint64_t MemcpyRoute::routed_bytes() const {
  std::lock_guard lock(route_state);
  return the_route.routed;
}

std::string MemcpyRoute::failure() const {
  std::lock_guard lock(route_state);
  return the_route.failure;
}

}  // namespace ptb::builtin

// Exported under the CUDA runtime's name (exports.map); see memcpy_route.h.
extern "C" __attribute__((visibility("default"))) cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                                                       cudaMemcpyKind kind) {
  using namespace ptb::builtin;
  Route* route = active.load(std::memory_order_acquire);
  const auto* from = static_cast<const uint8_t*>(src);
  if (route && routed_kind(kind) && count >= route->min_bytes && from >= route->begin && from < route->end &&
      count <= static_cast<uint64_t>(route->end - from)) {
    std::lock_guard lock(route_state);
    if (route->copier && route->failure.empty()) {
      std::string why = route->copier(dst, from, count);
      if (why.empty()) {
        route->routed += count;
        return cudaSuccess;
      }
      route->failure = why;
      return cudaErrorUnknown;
    }
  }
  return ptb_cudart_cudaMemcpy(dst, src, count, kind);
}
