#pragma once
/// @file random_dag.h
/// The random DAG of the `random_dag` cases, built the same way over
/// actorgrad's tensors (workloads.cpp) and libtorch's (torch_cases.cpp), so
/// that both engines run the same graph.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace actorgrad::bench {

/// `n` random ops (x + 1, x * 0.999, x + y) on `first` and the values they
/// make, each picking its inputs among the 8 most recent, drawn from a
/// generator seeded with `seed`; returns the last value.
template <class T>
T random_dag_of(T first, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> pool{std::move(first)};
  auto pick = [&] {
    std::size_t lo = pool.size() > 8 ? pool.size() - 8 : 0;
    return pool[lo + rng() % (pool.size() - lo)];
  };
  for (int i = 0; i < n; ++i) {
    switch (rng() % 3) {
    case 0: pool.push_back(pick() + 1.0); break;
    case 1: pool.push_back(pick() * 0.999); break;
    default: pool.push_back(pick() + pick()); break;
    }
  }
  return pool.back();
}

} // namespace actorgrad::bench
