#pragma once
/// @file node_table.h
/// The per-node state of one GraphTask, found by the node's address.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace actorgrad {

/// Maps a node's address to its state `V` within one GraphTask.
///
/// Note [Node table]
/// Every backward call looks each node up twice (once when counting
/// dependencies, once per gradient it receives), so the lookup is most of
/// the per-node cost of the scheduler's bookkeeping. std::unordered_map
/// allocates a list node per entry and hashes by a prime modulo; this table
/// keeps the states dense, in the order the dependency pass numbered them,
/// and finds them through an open-addressing index of (address, number)
/// pairs probed linearly, at most half full. Entries are only added while
/// the task is built (compute_dependencies) and never removed, so a state's
/// address is stable from the first lookup a scheduler makes.
template <class V>
class NodeTable {
public:
  NodeTable() { take_cached(); }
  ~NodeTable() { give_to_cache(); }
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;

  /// The state of `node`, default-made if it has none yet; `.second` is
  /// true when it was made. Invalidates earlier state pointers.
  std::pair<V*, bool> try_emplace(const void* node) {
    if ((values_.size() + 1) * 2 > capacity())
      grow();
    std::size_t i = home(node);
    while (index_[i].generation == generation_) {
      if (index_[i].node == node)
        return {&values_[index_[i].number], false};
      i = (i + 1) & mask_;
    }
    index_[i] = {node, static_cast<std::uint32_t>(values_.size()), generation_};
    return {&values_.emplace_back(), true};
  }

  /// The state of `node`, or null.
  V* find(const void* node) {
    if (values_.empty())
      return nullptr;
    for (std::size_t i = home(node);; i = (i + 1) & mask_) {
      if (index_[i].generation != generation_)
        return nullptr;
      if (index_[i].node == node)
        return &values_[index_[i].number];
    }
  }
  const V* find(const void* node) const { return const_cast<NodeTable*>(this)->find(node); }
  bool contains(const void* node) const { return find(node) != nullptr; }

  /// Empties the table and makes room for at least `n` nodes without
  /// growing: for up to 4 n when the thread's last table held that many
  /// (a graph is often wider than the lower bound its caller knows, and
  /// the same graph runs again and again).
  void reset(std::size_t n) {
    values_.clear();
    const std::size_t expected = std::max(n, std::min(values_.capacity(), 4 * n));
    values_.reserve(expected);
    const std::size_t capacity = std::max(min_capacity, std::bit_ceil(expected * 2));
    if (capacity > index_memory_) {
      index_ = std::make_unique<Slot[]>(capacity);
      index_memory_ = capacity;
      generation_ = 1;
    } else if (++generation_ == 0) { // see Note [Node table generations]
      std::fill(index_.get(), index_.get() + index_memory_, Slot{});
      generation_ = 1;
    }
    set_capacity(capacity);
  }
  std::size_t size() const { return values_.size(); }

private:
  // Note [Node table generations]
  // A slot is in use when its generation is the table's: reusing a block
  // for the next call only bumps the generation instead of clearing it
  // (clearing was a few instructions a node, and under callgrind a
  // `rep stos` counts one instruction a byte). New blocks start at 0, the
  // table at 1; when the counter wraps the block is cleared once.
  struct Slot {
    const void* node = nullptr;
    std::uint32_t number = 0;
    std::uint32_t generation = 0;
  };

  // Note [Node table memory]
  // A call of N nodes needs about (32 + sizeof(V)) N bytes here. Freeing a
  // block past 64 KiB makes glibc consolidate its fast bins (thousands of
  // instructions), and the next call on the thread would allocate it
  // again: so a table hands its blocks to a cache of the thread that drops
  // it, and the next table made on that thread takes them. Only blocks of
  // up to max_cached_capacity slots (1 MiB of index) are kept, so a thread
  // that once ran a huge graph does not hold its memory for good.
  static constexpr std::size_t min_capacity = 16;
  static constexpr std::size_t max_cached_capacity = std::size_t{1} << 16;
  struct Cache {
    std::vector<V> values;
    std::unique_ptr<Slot[]> index;
    std::size_t index_memory = 0;
    std::uint32_t generation = 0;
  };
  /// Written and read only by its own thread.
  static inline thread_local Cache cache_;

  void take_cached() {
    Cache& c = cache_;
    values_ = std::move(c.values);
    index_ = std::move(c.index);
    index_memory_ = std::exchange(c.index_memory, 0);
    generation_ = c.generation;
  }
  void give_to_cache() {
    if (index_memory_ > max_cached_capacity)
      return;
    Cache& c = cache_;
    if (c.index_memory >= index_memory_)
      return;
    values_.clear();
    c.values = std::move(values_);
    c.index = std::move(index_);
    c.index_memory = index_memory_;
    c.generation = generation_;
  }

  std::size_t capacity() const { return capacity_; }
  void set_capacity(std::size_t capacity) {
    capacity_ = capacity;
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
  }
  /// Fibonacci hashing of the address (its low bits are alignment zeros).
  std::size_t home(const void* node) const {
    return (reinterpret_cast<std::uintptr_t>(node) * 0x9E3779B97F4A7C15ull) >> shift_;
  }
  void grow() {
    const std::size_t old_capacity = capacity();
    const std::size_t capacity = old_capacity ? old_capacity * 2 : min_capacity;
    auto old = std::exchange(index_, std::make_unique<Slot[]>(capacity));
    const std::uint32_t old_generation = std::exchange(generation_, 1);
    index_memory_ = capacity;
    set_capacity(capacity);
    for (std::size_t k = 0; k < old_capacity; ++k)
      if (old[k].generation == old_generation) {
        std::size_t i = home(old[k].node);
        while (index_[i].generation == generation_)
          i = (i + 1) & mask_;
        index_[i] = {old[k].node, old[k].number, generation_};
      }
  }

  std::vector<V> values_;
  /// The index's block (index_memory_ slots, of which the first
  /// capacity() are in use).
  std::unique_ptr<Slot[]> index_;
  std::size_t index_memory_ = 0;
  std::size_t capacity_ = 0;
  std::uint32_t generation_ = 1;
  std::size_t mask_ = 0;
  int shift_ = 64;
};

} // namespace actorgrad
