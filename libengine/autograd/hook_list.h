#pragma once
/// @file hook_list.h
/// The hooks of one kind on a node or a leaf, readable by the engine
/// without a lock while they are added and removed.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actorgrad/libengine/autograd/hook_handle.h"

namespace actorgrad {

/// One registered hook.
template <class Fn>
struct HookEntry {
  Fn fn;
  /// Given at registration for errors; may be empty.
  std::string name;
  /// Registration number in its list (0, 1, ...; not reused after a
  /// removal): errors name the hook by it.
  std::uint32_t index = 0;
  /// The node input a tensor pre-hook watches (0 for the other kinds).
  std::uint32_t input_nr = 0;
  /// What its HookHandle removes.
  std::uint64_t id = 0;
};

/// Hooks in registration order, copy-on-write.
///
/// Note [Hook lists without a lock]
/// The entries live in an immutable, reference-counted block; `current_`
/// points at the block of the hooks now registered (null when there are
/// none). The engine takes a snapshot: it counts itself in `readers_`,
/// loads `current_`, adds a reference to that block and leaves `readers_`
/// again (three atomic operations, no waiting), then iterates the block
/// while user threads, or hooks, add and remove entries. A writer copies
/// the current block, edits the copy and publishes it with a
/// compare-and-swap, retrying when another writer came first. The old
/// block may still be in the hands of a reader that loaded `current_` but
/// has not counted its reference yet, so the writer waits until it sees
/// `readers_` at zero before it drops the list's reference: such a reader
/// counted itself before its load, and therefore before the swap; a reader
/// that counts itself later loads the new block. Only writers wait, and only
/// for those three operations. (std::atomic<std::shared_ptr> does the same
/// with a lock bit, and GCC 12's load releases that bit with a relaxed
/// store: ThreadSanitizer reports a data race on it.)
template <class Fn>
class HookList {
  /// The entries of one moment and the references to them.
  struct Block {
    explicit Block(std::vector<HookEntry<Fn>> e) : entries(std::move(e)) {}
    /// Incremented by a snapshot (and the list) taking the block,
    /// decremented when they drop it; the last one deletes it.
    std::atomic<std::uint32_t> refs{1};
    const std::vector<HookEntry<Fn>> entries;
  };

public:
  using Entries = std::vector<HookEntry<Fn>>;

  /// The hooks registered at one moment; keeps them alive while the engine
  /// calls them. Empty (false) when none were registered.
  class Snapshot {
  public:
    Snapshot() = default;
    Snapshot(Snapshot&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
    Snapshot& operator=(Snapshot&& other) noexcept {
      std::swap(block_, other.block_);
      return *this;
    }
    ~Snapshot() { release(block_); }

    explicit operator bool() const { return block_ != nullptr; }
    const Entries& operator*() const { return block_->entries; }
    const Entries* operator->() const { return &block_->entries; }

  private:
    friend class HookList;
    explicit Snapshot(Block* block) : block_(block) {}
    Block* block_ = nullptr;
  };

  HookList() = default;
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;
  ~HookList() { release(current_.load(std::memory_order_acquire)); }

  /// Appends `fn` and returns its handle. `owner` keeps this list alive (the
  /// node or tensor impl holding it); the handle holds it weakly.
  HookHandle add(const std::shared_ptr<void>& owner, Fn fn, std::string name = {},
                 std::uint32_t input_nr = 0) {
    const std::uint64_t id = next_hook_id();
    HookEntry<Fn> entry{std::move(fn), std::move(name),
                        next_index_.fetch_add(1, std::memory_order_relaxed), input_nr, id};
    update([&](Entries& v) {
      v.push_back(entry);
      return true;
    });
    return HookHandle(std::shared_ptr<void>(owner, this), &HookList::remove_entry, id);
  }

  /// True when no hook is registered (the engine's fast path: one load).
  bool empty() const { return current_.load(std::memory_order_acquire) == nullptr; }

  /// The hooks now registered, in registration order.
  Snapshot snapshot() const { return empty() ? Snapshot() : Snapshot(acquire_current()); }

private:
  /// The current block with a reference counted for the caller (or null).
  Block* acquire_current() const {
    readers_.fetch_add(1, std::memory_order_seq_cst);
    Block* block = current_.load(std::memory_order_seq_cst);
    if (block)
      block->refs.fetch_add(1, std::memory_order_relaxed);
    readers_.fetch_sub(1, std::memory_order_release);
    return block;
  }

  static void release(Block* block) {
    if (block && block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete block;
  }

  /// Publishes `edit` applied to a copy of the current entries, unless it
  /// returns false (nothing to change). Returns whether it published.
  template <class Edit>
  bool update(Edit edit) {
    for (;;) {
      Block* seen = acquire_current();
      Entries next = seen ? seen->entries : Entries{};
      if (!edit(next)) {
        release(seen);
        return false;
      }
      Block* fresh = next.empty() ? nullptr : new Block(std::move(next));
      Block* expected = seen; // no ABA: our reference keeps `seen` allocated
      if (current_.compare_exchange_strong(expected, fresh, std::memory_order_seq_cst)) {
        while (readers_.load(std::memory_order_seq_cst) != 0)
          std::this_thread::yield();
        release(seen); // the list's reference
        release(seen); // ours
        return true;
      }
      delete fresh;
      release(seen);
    }
  }

  static void remove_entry(void* self, std::uint64_t id) {
    static_cast<HookList*>(self)->update([id](Entries& v) {
      for (auto it = v.begin(); it != v.end(); ++it)
        if (it->id == id) {
          v.erase(it);
          return true;
        }
      return false;
    });
  }

  /// Written by writers (compare-and-swap), read by snapshots.
  std::atomic<Block*> current_{nullptr};
  /// Snapshots between counting themselves and holding their reference:
  /// incremented and decremented by them, read by writers (Note [Hook lists
  /// without a lock]).
  mutable std::atomic<std::uint32_t> readers_{0};
  /// Written and read by add (fetch_add): the next registration number.
  std::atomic<std::uint32_t> next_index_{0};
};

} // namespace actorgrad
