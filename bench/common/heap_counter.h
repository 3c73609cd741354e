#pragma once
/// @file heap_counter.h
/// The heap's live bytes and their high-water mark, counted by
/// heap_counter.cpp, which replaces malloc and its family in the binaries
/// that link it (bench_chain_memory only: the counting costs every
/// allocation two atomic operations, which the timed and callgrind
/// binaries must not pay).
///
/// Note [Counting the heap, not the resident set]
/// ru_maxrss counts pages the process has touched. A backward's extra peak
/// read from it moves in steps of whole pages and, worse, of the heap's
/// growth steps (about 128 KiB): the same engine on the same graph lands on
/// one of a few levels from one run to the next, and two engines that make
/// the same allocations read apart by a level or not. The live bytes of the
/// heap (malloc_usable_size of every block not yet freed) do not depend on
/// which pages glibc reused, so their peak during a backward, less their
/// value before it, moves only with what the engine itself allocates.

#include <cstddef>

namespace actorgrad::bench::heap_counter {

/// Bytes held by the heap's live blocks now, over every thread.
std::size_t live_bytes();
/// The most live bytes since the last reset_peak (or since the start).
std::size_t peak_bytes();
/// Starts a new high-water mark at the live bytes of now.
void reset_peak();

} // namespace actorgrad::bench::heap_counter
