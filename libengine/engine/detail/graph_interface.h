#pragma once
/// @file graph_interface.h
/// The graph interface: what the scheduler needs from a graph type.
/// Internal (libengine/engine/detail/, not installed).

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "actorgrad/device/device.h"
#include "actorgrad/libengine/engine/detail/dispatch.h"
#include "actorgrad/libengine/engine/graph_task_base.h"

namespace actorgrad::detail {

// Note [Graph interface]
// One scheduler runs any graph: actorgrad's own Node graphs, test graphs,
// and (the torch bridge) libtorch's torch::autograd::Node graphs. The
// schedulers (the actor engine's runners, the ReferenceExecutor, the
// baseline) see a GraphTaskBase and opaque ready tasks (ReadyTask); the
// algorithms of a backward call (dependency counting with topological_nr
// pruning, exec_info and captures, input-buffer accumulation, the call
// protocol of a node: tensor pre-hooks, pre-hooks, apply, validation,
// post-hooks, release of saved variables, anomaly check) are written once,
// in BasicGraphTask<G>, over a traits type G that satisfies GraphTraits
// below. A graph type needs no per-node mirror object: G's functions read
// its own nodes directly.
//
// Why this split, measured (callgrind, tools/bench/callgrind_chain.sh,
// actor engine, pass-through chain of 1,000): the graph-typed code is a
// template, so its per-node accessors (sequence_nr, next edges, device)
// are inlined, as before; the actor scheduler reaches it through one
// virtual call per node (GraphTaskBase::run) and one per output routed
// (Dispatch::ready or Dispatch::send). A one-thread executor hands the whole
// task over instead (GraphTaskBase::run_all_here): its dispatch is a final
// class known to the template, so it costs no virtual call per node; that
// took the reference executor from +4.3% to +1.7% on the chain. A full template over the scheduler
// (actors included) would save those calls but compile the CAF actors once
// per graph type and give each graph type its own device workers; a
// virtual call per node accessor (about ten per node) was the other
// extreme. Figures before/after: `git show ef4dedc:bench/RESULTS.md`, "Core v2".

/// What BasicGraphTask<G> needs from graph type G. Every function is static;
/// `describe(n)` sets NodeInfo::id to `&n`.
///
/// Types: `node` (a backward function), `edge` (an output edge: a node
/// handle and an input number), `value` (a gradient), `value_list`
/// (std::vector<value>), `input_buffer` (one node's inputs as they add
/// up), `source` (where a gradient was produced: what its accumulation
/// waits for), `in_flight` (a gradient crossing actors, with its source),
/// `task_streams` (per-call stream bookkeeping: leaf and caller streams),
/// `run_scope` (the guards around running a node: grad mode, current task,
/// device stream).
///
/// Optional: `G::runs_user_code(n)`, whether calling `n` may run code other
/// than the graph type's own (hooks, custom functions); a task reports it
/// for its whole graph (BasicGraphTask::runs_user_code).
/// `G::table_hint(n)`, a NodeHint& kept in the node: the task's node table
/// then finds states without hashing (Note [Node table hints]).
/// `G::lane_hint(n)`, a LaneHint& kept in the node: the CPU lane that last
/// ran it in a spread call, plus one (Note [Lanes that stay] in
/// actors/detail/cpu_lanes.h).
/// `G::recycle_inputs(list&&)`, given a node's input list after its call
/// (Note [Recycled input lists]).
/// `G::topological_order_edited()`, true when an edit of the graph may have
/// left a node's topological_nr above its parents': a call with inputs then
/// prunes nothing (Note [Edited topological numbers] in
/// libengine/autograd/node.cpp).
/// The CPU lane that last ran a node, plus one; 0: none did.
using LaneHint = std::atomic<std::uint16_t>;

template <class G>
concept GraphTraits = requires(const typename G::node& n, typename G::node& m,
                               const typename G::edge& e, typename G::value v,
                               typename G::value_list vl, typename G::input_buffer b,
                               typename G::in_flight f, std::size_t i) {
  // graph structure
  { G::target(e) } -> std::convertible_to<typename G::node*>;
  { G::target_handle(e) } -> std::convertible_to<std::shared_ptr<typename G::node>>;
  { G::input_nr(e) } -> std::convertible_to<std::uint32_t>;
  { G::sequence_nr(n) } -> std::convertible_to<std::uint64_t>;
  { G::topological_nr(n) } -> std::convertible_to<std::uint64_t>;
  { G::num_outputs(n) } -> std::convertible_to<std::size_t>;
  { G::next_edge(n, i) } -> std::convertible_to<const typename G::edge&>;
  { G::num_inputs(n) } -> std::convertible_to<std::size_t>;
  { G::device(n) } -> std::convertible_to<Device>;
  { G::describe(n) } -> std::convertible_to<NodeInfo>;
  // running a node
  { G::call_function(m, std::move(vl)) } -> std::convertible_to<typename G::value_list>;
  G::call_tensor_pre_hooks(m, vl);
  G::release_variables(m);
  { G::has_nan(v) } -> std::convertible_to<bool>;
  // gradients
  { G::take_inputs(std::move(b)) } -> std::convertible_to<typename G::value_list>;
  { G::local_source(n, v) } -> std::convertible_to<typename G::source>;
  { G::make_in_flight(n, n, std::move(v)) } -> std::convertible_to<typename G::in_flight>;
  { G::sent_value(f) } -> std::convertible_to<typename G::value&>;
  { G::sent_source(f) } -> std::convertible_to<typename G::source>;
};

} // namespace actorgrad::detail
