#pragma once
/// @file hook_list.h
/// The hooks of one kind on a node or a leaf, readable by the engine
/// without a lock while they are added and removed.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libengine/autograd/hook_handle.h"

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
/// The entries live in an immutable vector published through an
/// std::atomic<std::shared_ptr>. The engine takes a snapshot (one load) and
/// iterates it while a user thread, or a hook, adds or removes entries: a
/// writer copies the vector, edits the copy and publishes it with a
/// compare-and-swap, retrying when another writer came first. An old
/// vector lives as long as a snapshot holds it. `size_` lets the engine
/// skip the load for the common empty list.
template <class Fn>
class HookList {
public:
  using Entries = std::vector<HookEntry<Fn>>;

  HookList() = default;
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;

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
    size_.fetch_add(1, std::memory_order_release);
    return HookHandle(std::shared_ptr<void>(owner, this), &HookList::remove_entry, id);
  }

  /// True when no hook is registered (the engine's fast path).
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }

  /// The hooks now registered, in registration order; null when none.
  std::shared_ptr<const Entries> snapshot() const {
    return empty() ? nullptr : entries_.load(std::memory_order_acquire);
  }

private:
  /// Publishes `edit` applied to a copy of the current entries, unless it
  /// returns false (nothing to change). Returns whether it published.
  template <class Edit>
  bool update(Edit edit) {
    auto current = entries_.load(std::memory_order_acquire);
    for (;;) {
      Entries next = current ? *current : Entries{};
      if (!edit(next))
        return false;
      auto published = std::make_shared<const Entries>(std::move(next));
      if (entries_.compare_exchange_weak(current, std::move(published), std::memory_order_acq_rel,
                                         std::memory_order_acquire))
        return true;
    }
  }

  static void remove_entry(void* self, std::uint64_t id) {
    auto& list = *static_cast<HookList*>(self);
    const bool removed = list.update([id](Entries& v) {
      for (auto it = v.begin(); it != v.end(); ++it)
        if (it->id == id) {
          v.erase(it);
          return true;
        }
      return false;
    });
    if (removed)
      list.size_.fetch_sub(1, std::memory_order_release);
  }

  std::atomic<std::shared_ptr<const Entries>> entries_;
  /// Written by add/remove after publishing (increments and decrements
  /// commute, so it settles to the entry count), read by empty(): a reader
  /// that sees 0 while an add is under way sees the list of before the add.
  std::atomic<std::uint32_t> size_{0};
  /// Written and read by add (fetch_add): the next registration number.
  std::atomic<std::uint32_t> next_index_{0};
};

} // namespace actorgrad
