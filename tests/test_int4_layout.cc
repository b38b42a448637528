// The two readings of tinygemm's packed int4 layout in int4.cu must agree:
// the direct kernel walks it word by word (lane l of a warp takes word
// (n-block, outer tile, l, pair) and its eight nibbles; this walk, checked
// against eager PyTorch on the GPU, is repeated here), the dequantization
// reads a word at a time and asks int4_weight_at which weights it holds,
// int4_position asks the other way. Every weight must be found exactly
// once, where the walk put it.
#include <set>
#include <utility>

#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "kernels/int4_layout.h"

using ptb::builtin::int4_position;
using ptb::builtin::int4_weight_at;

TEST_CASE("int4 layout: the dequantization finds each weight where the direct kernel's walk put it") {
  for (uint32_t tiles : {2u, 4u, 8u}) {
    CAPTURE(tiles);
    const uint32_t n_size = 24, k_super = 3, k_size = k_super * tiles * 16, pairs = tiles / 2;
    std::set<std::pair<uint64_t, uint32_t>> seen;
    for (uint32_t nb = 0; nb < n_size / 8; ++nb) {
      for (uint32_t outer = 0; outer < k_super; ++outer) {
        for (uint32_t lane = 0; lane < 32; ++lane) {
          for (uint32_t pair = 0; pair < pairs; ++pair) {
            const uint64_t word = ((static_cast<uint64_t>(nb) * k_super + outer) * 32 + lane) * pairs + pair;
            for (uint32_t second = 0; second < 2; ++second) {
              for (uint32_t high = 0; high < 2; ++high) {
                for (uint32_t parity = 0; parity < 2; ++parity) {
                  // int4.cu's direct kernel: column nb*8 + lane/4, and k
                  // (outer*tiles + tile)*16 + (lane%4)*2 + high*8 + parity.
                  const uint32_t n = nb * 8 + lane / 4;
                  const uint32_t k = (outer * tiles + 2 * pair + second) * 16 + (lane % 4) * 2 + high * 8 + parity;
                  const uint32_t shift = parity * 16 + (second * 2 + high) * 4;
                  const auto at = int4_position(n, k, k_super, tiles);
                  CHECK(at.word == word);
                  CHECK(at.shift == shift);
                  CHECK(seen.insert({at.word, at.shift}).second);
                  const auto back = int4_weight_at(word, shift, k_super, tiles);
                  CHECK(back.n == n);
                  CHECK(back.k == k);
                }
              }
            }
          }
        }
      }
    }
    CHECK(seen.size() == static_cast<size_t>(n_size) * k_size);
  }
}

#else

TEST_CASE("int4 layout: the two readings") {
  ptb::test::skip("this build has no built-in runtime core (the CUDA toolkit was not found)");
}

#endif
