#pragma once
/// @file node_table.h
/// The per-node state of one GraphTask, found through the node's hint or by
/// its address.
/// Internal (libengine/engine/detail/, not installed).

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "actorgrad/libengine/engine/detail/address_hash.h"
#include "actorgrad/libengine/engine/detail/spare_stack.h"

namespace actorgrad::detail {

/// Where a graph type keeps, in each of its nodes, the number the last
/// NodeTable gave that node (see Note [Node table hints]). Written by the
/// numbering pass of whichever table numbers the node, read by lookups of
/// any table; relaxed: a table never trusts it without checking.
using NodeHint = std::atomic<std::uint32_t>;

/// Hinted numbering passes (Note [Numbering passes in flight]): bits 0-31
/// count the passes in flight, bits 32-63 the passes started (modulo
/// 2^32). Changed only by the read-modify-writes of NodeTable's
/// begin_pass (every thread that numbers a graph through hints) and
/// end_pass, each of which reads what the last one left.
inline std::atomic<std::uint64_t> hinted_passes{0};

/// Maps a node to its state `V` within one GraphTask.
///
/// Note [Node table]
/// Every backward call looks each node up twice (once when counting
/// dependencies, once per gradient it receives), so the lookup is most of
/// the per-node cost of the scheduler's bookkeeping. std::unordered_map
/// allocates a list node per entry and hashes by a prime modulo; this table
/// keeps the states dense, in the order the dependency pass numbered them,
/// and finds them by the node's key: through the node's hint when its graph
/// type has one, else through an open-addressing index of (key, number)
/// pairs probed linearly, at most half full. Entries are only added while
/// the task is built (compute_dependencies) and never removed, so a state's
/// address is stable from the first lookup a scheduler makes.
///
/// Note [Node table hints]
/// A hashed index misses the cache on every probe once a graph outgrows it
/// (at 10^6 nodes nearly every lookup), and hashing is a good part of the
/// per-node cost on small graphs. So a graph type that can spare a word per
/// node gives the table a NodeHint there: the numbering pass writes the
/// node's number into it, and a lookup reads the number and checks it
/// (keys_[number] is this hint). Nodes are numbered in the order the pass
/// reaches them, so the lookups of a chain walk the states in order.
/// A hint is shared by every table that numbers the node: a concurrent or
/// nested call over the same nodes rewrites it. That is why
///  - a lookup that finds a rewritten hint falls back to the index, built
///    from keys_ on the first such miss (lookups of one table come from one
///    thread at a time, or the index was built at finish_numbering);
///  - the pass itself cannot tell a node it has not met from one whose hint
///    another pass rewrote after this one wrote it, and would number such a
///    node twice. When another pass overlapped this one (Note [Numbering
///    passes in flight]), finish_numbering checks that every hint still
///    holds the number this pass gave it; if one does not, the caller
///    numbers the graph again through the index (reset with hinted = false).
/// Rewrites are rare (two calls numbering one graph at the same moment),
/// and each only costs the index that every lookup used to pay.
///
/// Note [Numbering passes in flight]
/// Checking every hint again reads every node a second time, a cache miss
/// a node on a large graph (4% of a backward call on a chain of 10^6). Only
/// a numbering pass writes hints, so a pass that no other one overlapped
/// cannot have lost one, and finish_numbering checks only after an
/// overlap. Each hinted pass counts itself in hinted_passes when
/// it starts (one more started, one more in flight) and when it ends (one
/// fewer in flight), both read-modify-writes, acq_rel. A pass overlapped
/// another when one was in flight as it started, or one started before it
/// ended. Otherwise every other pass either ended before this one started,
/// and its end happens before this start (so its hint writes come before
/// this pass's own), or started after this one ended, and this end happens
/// before that start (so this pass read no hint it wrote). Passes of
/// other graphs count too: they only cost the check, as every pass paid it
/// before. A pass left unfinished (a walk that threw) ends with the next
/// reset or with the table.
template <class V>
class NodeTable {
public:
  NodeTable() { take_cached(); }
  ~NodeTable() {
    if (pass_open_)
      end_pass();
    give_to_cache();
  }
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;

  /// The state of the node keyed `node` (its address), default-made if it
  /// has none yet; `.second` is true when it was made. Invalidates earlier
  /// state pointers. A table reset with hints takes the hint overload only.
  std::pair<V*, bool> try_emplace(const void* node) {
    if (!indexed_)
      build_index();
    if (V* v = find_indexed(node))
      return {v, false};
    return {&add(node), true};
  }
  /// The same for a node with a hint (keyed by the hint's address): while
  /// the table numbers through hints, writes the new number into `hint`
  /// (only then: Note [Numbering passes in flight]).
  std::pair<V*, bool> try_emplace(NodeHint& hint) {
    if (!pass_open_)
      return try_emplace(static_cast<const void*>(&hint));
    if (V* v = check(hint))
      return {v, false};
    hint.store(static_cast<std::uint32_t>(values_.size()), std::memory_order_relaxed);
    return {&add(&hint), true};
  }

  /// The state of the node keyed `node`, or null.
  V* find(const void* node) {
    if (!indexed_)
      build_index();
    return find_indexed(node);
  }
  /// The state of the node with `hint`, or null. The first lookup that
  /// finds a rewritten hint builds the index: see Note [Node table hints]
  /// for why only one thread may look up at a time until finish_numbering
  /// built it.
  V* find(const NodeHint& hint) {
    if (V* v = check(hint)) [[likely]]
      return v;
    return find(static_cast<const void*>(&hint));
  }
  const V* find(const void* node) const { return const_cast<NodeTable*>(this)->find(node); }
  const V* find(const NodeHint& hint) const { return const_cast<NodeTable*>(this)->find(hint); }

  /// Empties the table and makes room for at least `n` nodes without
  /// growing: for up to 4 n when the thread's last table held that many
  /// (a graph is often wider than the lower bound its caller knows, and
  /// the same graph runs again and again). `hinted`: number the nodes
  /// through their hints, with no index (see Note [Node table hints]).
  void reset(std::size_t n, bool hinted) {
    values_.clear();
    keys_.clear();
    const std::size_t expected = std::max(n, std::min(values_.capacity(), 4 * n));
    values_.reserve(expected);
    keys_.reserve(expected);
    indexed_ = false;
    if (pass_open_)
      end_pass();
    if (hinted)
      begin_pass();
    else
      reset_index(expected);
  }
  /// Ends the numbering pass. False when the table numbered through hints
  /// and one was rewritten meanwhile: then the pass may have numbered a
  /// node twice and must run again, with reset(n, false). `shared`: the
  /// states will be looked up from several threads, so any index a lookup
  /// could need is built now.
  bool finish_numbering(bool shared) {
    if (!pass_open_)
      return true;
    if (end_pass()) // another pass overlapped: Note [Numbering passes in flight]
      for (std::size_t k = 0; k < keys_.size(); ++k)
        if (static_cast<const NodeHint*>(keys_[k])->load(std::memory_order_relaxed) != k)
          return false;
    if (shared)
      build_index();
    return true;
  }
  /// From now on the states are looked up from several threads: builds
  /// the index a lookup could otherwise build (Note [Node table hints]).
  void share() {
    if (!indexed_)
      build_index();
  }
  std::size_t size() const { return values_.size(); }
  /// The number of the state at `v` (it stays valid while addresses move).
  std::uint32_t number_of(const V* v) const {
    return static_cast<std::uint32_t>(v - values_.data());
  }
  /// The state numbered `number`.
  V& at(std::uint32_t number) { return values_[number]; }
  /// Calls `f(key, state)` for every node, in the order they were numbered.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t k = 0; k < keys_.size(); ++k)
      f(keys_[k], values_[k]);
  }

private:
  // Note [Node table generations]
  // A slot is in use when its generation is the table's: reusing a block
  // for the next call only bumps the generation instead of clearing it
  // (clearing was a few instructions a node, and under callgrind a
  // `rep stos` counts one instruction a byte). New blocks start at 0, the
  // table at 1; when the counter wraps the block is cleared once.
  struct Slot {
    const void* key = nullptr;
    std::uint32_t number = 0;
    std::uint32_t generation = 0;
  };

  // Note [Node table memory]
  // A call of N nodes needs about (8 + sizeof(V)) N bytes here, and 32 N
  // more when it has an index. Freeing a block past 64 KiB makes glibc
  // consolidate its fast bins (thousands of instructions), and the next
  // call on the thread would allocate it again: so a table hands its blocks
  // to a cache of the thread that drops it, and the next table made on that
  // thread takes them. The cache is a stack: a backward call and the calls
  // nested in it (nodes that run backward, as checkpointing does), each
  // find theirs again in the next pass. It keeps the blocks of two tables
  // of up to max_cached nodes, so a thread that once ran a huge graph does
  // not hold its memory for good, and of up to max_tables - 2 more of up to
  // small_table nodes (a few KiB each): nested calls are small and go as
  // deep as nested_calls_with_spares (spare_stack.h), and every call whose table missed
  // here made three mallocs (values, keys, index), on a heap the nested
  // calls' own tensors leave fragmented. The cache itself is on the heap, one
  // pointer in thread-local storage: in a program, every thread gets the
  // whole TLS block, the threads that never run a call too. (It went there
  // when the Python module's thread-locals came from glibc's small static
  // surplus and 300 bytes more failed its import; they no longer do: Note
  // [Thread-locals in shared objects] in CMakeLists.txt.)
  static constexpr std::size_t min_capacity = 16;
  static constexpr std::size_t max_cached = std::size_t{1} << 15;
  static constexpr std::size_t small_table = 64;
  static constexpr std::size_t max_tables = nested_calls_with_spares;
  static constexpr std::size_t max_large = 2;
  struct Cache {
    std::vector<V> values;
    std::vector<const void*> keys;
    std::unique_ptr<Slot[]> index;
    std::size_t index_memory = 0;
    std::uint32_t generation = 0;
  };
  static bool large(const std::vector<V>& values) { return values.capacity() > small_table; }
  struct Caches {
    std::array<Cache, max_tables> tables;
    /// tables[0, count) hold blocks, of which `large` hold more than
    /// small_table values.
    std::size_t count = 0;
    std::size_t large = 0;
  };
  /// Written and read only by its own thread.
  static inline thread_local std::unique_ptr<Caches> cache_;
  static Caches& thread_caches() {
    std::unique_ptr<Caches>& c = cache_;
    if (!c) [[unlikely]]
      c = std::make_unique<Caches>();
    return *c;
  }

  void take_cached() {
    Caches& caches = thread_caches();
    if (caches.count == 0)
      return;
    Cache& c = caches.tables[--caches.count];
    caches.large -= large(c.values);
    values_ = std::move(c.values);
    keys_ = std::move(c.keys);
    index_ = std::move(c.index);
    index_memory_ = std::exchange(c.index_memory, 0);
    generation_ = c.generation;
  }
  void give_to_cache() {
    if (values_.capacity() > max_cached)
      return;
    Caches& caches = thread_caches();
    const bool is_large = large(values_);
    Cache* c = nullptr;
    // Small tables leave max_large slots free, so a large one always finds
    // a place while fewer than max_large are kept.
    if (is_large ? caches.large < max_large
                 : caches.count - caches.large < max_tables - max_large) {
      c = &caches.tables[caches.count++];
      caches.large += is_large;
    } else if (is_large) { // replace the smallest large one, if this one's blocks are larger
      for (Cache& kept : std::span(caches.tables).first(caches.count))
        if (large(kept.values) && (!c || kept.values.capacity() < c->values.capacity()))
          c = &kept;
      if (!c || (c->values.capacity() >= values_.capacity() && c->index_memory >= index_memory_))
        return;
    } else {
      return;
    }
    values_.clear();
    keys_.clear();
    c->values = std::move(values_);
    c->keys = std::move(keys_);
    c->index = std::move(index_);
    c->index_memory = index_memory_;
    c->generation = generation_;
  }

  static constexpr std::uint64_t one_started = std::uint64_t{1} << 32;
  static constexpr std::uint64_t in_flight_mask = one_started - 1;
  /// Counts this table's numbering pass as started and in flight.
  void begin_pass() {
    const std::uint64_t before =
      hinted_passes.fetch_add(one_started + 1, std::memory_order_acq_rel);
    pass_overlapped_ = (before & in_flight_mask) != 0;
    pass_number_ = static_cast<std::uint32_t>(before >> 32) + 1;
    pass_open_ = true;
  }
  /// Counts it as ended; returns whether another pass overlapped it.
  bool end_pass() {
    pass_open_ = false;
    const std::uint64_t before = hinted_passes.fetch_sub(1, std::memory_order_acq_rel);
    return pass_overlapped_ || static_cast<std::uint32_t>(before >> 32) != pass_number_;
  }

  /// The state the hint points at, if the hint is still this table's.
  V* check(const NodeHint& hint) {
    const std::uint32_t h = hint.load(std::memory_order_relaxed);
    return h < keys_.size() && keys_[h] == &hint ? &values_[h] : nullptr;
  }
  V& add(const void* key) {
    if (indexed_) {
      if ((values_.size() + 1) * 2 > capacity_)
        build_index(capacity_); // twice the slots
      insert(key, static_cast<std::uint32_t>(values_.size()));
    }
    keys_.push_back(key);
    return values_.emplace_back();
  }

  V* find_indexed(const void* key) {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (index_[i].generation != generation_)
        return nullptr;
      if (index_[i].key == key)
        return &values_[index_[i].number];
    }
  }
  void insert(const void* key, std::uint32_t number) {
    std::size_t i = home(key);
    while (index_[i].generation == generation_)
      i = (i + 1) & mask_;
    index_[i] = {key, number, generation_};
  }
  /// An empty index for `n` keys, at most half full.
  void reset_index(std::size_t n) {
    const std::size_t capacity = std::max(min_capacity, std::bit_ceil(n * 2));
    if (capacity > index_memory_) {
      index_ = std::make_unique<Slot[]>(capacity);
      index_memory_ = capacity;
      generation_ = 1;
    } else if (++generation_ == 0) { // see Note [Node table generations]
      std::fill(index_.get(), index_.get() + index_memory_, Slot{});
      generation_ = 1;
    }
    set_capacity(capacity);
    indexed_ = true;
  }
  /// Indexes every key numbered so far (the table numbered through hints,
  /// or its index is full), with room for as many states as values_ has
  /// and for at least `n`.
  /// Out of line: a fallback, kept out of the lookups it would bloat.
  [[gnu::noinline]] void build_index(std::size_t n = 0) {
    reset_index(std::max(n, values_.capacity()));
    for (std::size_t k = 0; k < keys_.size(); ++k)
      insert(keys_[k], static_cast<std::uint32_t>(k));
  }
  void set_capacity(std::size_t capacity) {
    capacity_ = capacity;
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
  }
  /// The key's slot when nothing is in the way.
  std::size_t home(const void* key) const { return address_hash(key, shift_); }
  std::vector<V> values_;
  /// The key of each state: the node's address, or its hint's.
  std::vector<const void*> keys_;
  /// The index's block (index_memory_ slots, of which the first
  /// capacity_ are in use); in use only while indexed_.
  std::unique_ptr<Slot[]> index_;
  std::size_t index_memory_ = 0;
  std::size_t capacity_ = 0;
  std::uint32_t generation_ = 1;
  std::size_t mask_ = 0;
  int shift_ = 64;
  /// The index holds every key.
  bool indexed_ = false;
  /// Numbering through hints (Note [Node table hints]): a pass counted in
  /// flight from reset until finish_numbering (begin_pass, end_pass).
  bool pass_open_ = false;
  /// Another pass was in flight when this one began.
  bool pass_overlapped_ = false;
  /// The started count this pass made (modulo 2^32).
  std::uint32_t pass_number_ = 0;
};

} // namespace actorgrad::detail
