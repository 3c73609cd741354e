#pragma once
/// @file cpu_lanes.h
/// How the ready CPU nodes of a spread call move between the threads that
/// run them. Internal.

#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/observer.h"
#include "actorgrad/libengine/engine/detail/ready_heap.h"

namespace actorgrad::detail {

// Note [Parallel CPU nodes]
// PyTorch runs every CPU node of a call on the calling thread. With
// EngineConfig::cpu_workers = N > 1 a CPU-only call is *spread*
// (GraphTaskBase::spread_cpu_nodes): its CPU nodes run on N lanes, its
// coordinator (the caller, or the actor that coordinates a nested or async
// call) and the engine's N - 1 CPU workers, actors like the device workers
// (a DeviceWorker of the CPU) shared by every call. Three rules keep the
// node states without a lock and the results independent of timing:
// - Ownership. A node that one gradient reaches (a dependency count of 1)
//   belongs to the lane that delivers that gradient: it accumulates and runs
//   there, so a chain stays on one thread and sends nothing. A node that
//   several gradients reach (ExecInfo::joins) belongs to the coordinator: a
//   lane that produces a gradient for it sends it a msg::Grad, as for a
//   device node (BasicGraphTask::route_spread); so does a node that needs
//   its call's thread (Note [Nodes that need their call's thread]). Each
//   node's state is still
//   written by one thread at a time (Note [Node state ownership]); a ready
//   task that moves to another lane travels in a message, which orders it.
// - Sharing. A lane about to run its next node, with two or more ready
//   tasks of a spread call in its heap, hands a share of them to the lanes
//   of that call that wait with nothing to run (share_ready_work): with k
//   such lanes each gets 1/(k + 1) of the tasks, in msg::Tasks, taken from
//   the top (the branches the ready order starts next, while the path they
//   came from stays) but for leaf accumulators (AccumulateGrad), which
//   take less time than a hand-over. A ready task's inputs are complete and
//   it holds nothing of its lane, so any lane may run it; what it makes
//   ready stays on the lane that ran it (but for forks over a graph run
//   before: Note [Lanes that stay]). A lane announces that it waits with
//   nothing to run (EngineActor::set_idle, Want::waiting) and a sharer
//   claims it (claim_idle), so two sharers do not both hand it work. A
//   lane also announces it when it starts the last task of its heap
//   (Want::hungry, in Runner::dispatch_until), until its own node makes a
//   task ready: the task handed over then waits in its mailbox when the
//   node ends, instead of the lane waiting a whole node of its sharer's
//   for it (a sharer shares only between its nodes). Each lane runs its
//   heap in the ready order (depth, then sequence_nr), as every actor
//   does. A lane with nothing to run polls its mailbox for
//   EngineConfig::cpu_worker_spin before it sleeps (Note [Spinning before
//   blocking] in runner.cpp): a node handed to a polling lane, and the last
//   gradient sent to a polling coordinator, cost no wake-up, which on a VM
//   takes longer than many nodes.
// - Order. A joining node's gradients come from several threads in an order
//   set by timing, and floating-point addition is not associative. In a
//   spread call they wait on the coordinator until the last one came, then
//   add up in one fixed order: InputOrder, the producers' numbers in the
//   task's dependency walk, then their output numbers (add_input_in_order).
//   The walk's numbers depend on the graph alone; sequence_nr would not do,
//   since libtorch counts it per thread, so the nodes that a create_graph
//   call made on several threads would sort by timing in the next call.
//   Each gradient's bits are then the same on every run, and the same with
//   any number of lanes above one. A node that one gradient reaches adds
//   nothing. Against the one-thread call: a buffer that two gradients reach
//   has the same bits (a + b == b + a); one that three or more reach may
//   differ in its last bits, the one-thread order following readiness.
// Completion, errors and wake-ups are those of a call that crosses devices
// (Note [Completion without a lock] in runner.cpp), so a spread call's
// coordinator has a mailbox even on the CPU. A call with a device node is
// not spread: its device nodes' gradients from several lanes would add up
// on a device worker in their order of arrival.

// Note [Spreading a call where it branches]
// A spread call costs more per node than a call on one thread: each ready
// task holds the task and is counted (Note [Completion without a lock] in
// runner.cpp), joining nodes' gradients wait and sort, and a hand-over
// wakes a lane. A chain gains nothing for it, nor an MLP, whose only side
// branches are its parameters' one- or two-node paths to their leaves, nor
// a transformer layer, whose attention branches join again after a few
// nodes (its longest chain of dependent nodes is 97% of its node time:
// `actorgrad trace` summary): measured on this 2-core machine, they ran
// 1.1 to 1.4x slower when spread from the start (bench/RESULTS.md). Where
// a path's own nodes end, the topological_nr would not say (a branch that
// joins again still has the whole graph below it), so the count walks them. So a call that would
// run on one thread with one CPU worker (Note [CPU calls on a caller] in runner.cpp) starts the
// same way with several, on run_all_here's loop, and looks at its ready tasks before each node:
// once two of them each head EngineConfig::cpu_spread_branch nodes (8) or more of their own (nodes
// that only their path feeds: one dependency left, BasicGraphTask::heads_branch), the call has two
// branches that can each keep a lane busy, and the loop stops; its ready tasks go into the
// coordinator's heap, spread_cpu_nodes runs, and the dispatch loop shares them from there. The
// point where it stops depends on the graph alone (one thread ran the nodes before it, in the ready
// order), so the bits stay the same on every run: gradients that reached a node's buffer before it
// were added in the one-thread order, the rest wait and sort (rule Order above). A worker's call
// or an observed call spreads from its start, as before; a nested call does not spread (Note
// [Nested calls stay on one lane]).

// Note [Lanes that stay]
// Which lane takes which branch of a spread call depends on timing: who was
// idle when a sharer looked. Over the same graph again (retain_graph), a
// node that another lane ran last time finds its state, reference counts
// and saved tensors' counts in that lane's cache, and each line it writes
// moves between cores: wide_dag/64x20 on 2 workers took 1.04-1.09x the
// time of two independent copies (which share nothing) when this VM's
// cores passed a cache line in ~100 ns, 1.27-1.43x when they took 370-490
// ns, and about 420 of its 1408 nodes ran on the other lane than the call
// before (bench/RESULTS.md, "the host's two modes" and "Lanes that stay").
// So, unless EngineConfig::cpu_keep_lanes is off:
// - nodes keep the lane that last ran them (G::lane_hint: a field of
//   actorgrad's nodes, a slot of a table for libtorch's; Runner::run writes
//   it only when it changes, so a node that stays keeps its line
//   unwritten);
// - when a node makes several tasks of its spread call ready (a fork), and
//   for the ready tasks a call has when it spreads, each goes to the lane
//   that ran it last time (send_to_last_lane); one that a node makes ready
//   alone stays, as before, so a chain runs where its head went;
// - a sharer keeps the tasks it ran itself last time from a hungry lane:
//   those go only to a lane that waits with nothing to run (Want::waiting),
//   when it has no other task to give. A hungry lane, still running its
//   last node, would otherwise take the next node of the sharer's chain
//   at nearly every node of its own, and placement would follow timing.
// Sharing still corrects what timing unbalances, so some nodes still move
// (about 120-150 a call on wide_dag). Handing over every task whose lane
// changed, a chain's next node included, moved almost none (about 7) but
// handed over twice as many tasks and was slower. The placement is a hint:
// results do not depend on it (rule Order above), and a node without one (a
// new graph) stays where it became ready. EngineStats::cpu_nodes_moved
// counts the nodes that ran on another lane than last time.

// Note [Nodes that need their call's thread]
// libtorch keeps the GraphTask of the call a node runs for in a
// thread-local (current_graph_task in its engine.cpp), which only its
// thread_main sets, around each node (GraphTaskGuard, not exported). A
// bridge call that runs in a libtorch GraphTask (actors/torch/
// bridge_engine.cpp: user code, grad(inputs=), anomaly mode, a profiler,
// every nested call) has it set on one thread: the one that runs the
// call's Trampoline, its coordinator. Nodes read it: queue_callback queues
// on it (and throws without one), needs_input_grad and libtorch's own
// formulas ask its exec_info which outputs to compute
// (task_should_compute_output), is_checkpoint_valid and
// _will_engine_execute_node read it, and TorchGraph::capture finds the
// capture hooks of grad(inputs=) in it. A spread call's node on a CPU
// worker found none there: a custom Function's queue_callback threw
// "Final callbacks can only be installed during backward pass" and its
// needs_input_grad said true for an input that grad(inputs=) did not ask
// for; and since a formula then computes every output, grad(igamma(a, x),
// inputs=[x]) threw "the derivative for 'igamma: input' is not
// implemented", which stock never computes
// (tests/torch/test_bridge_reentrant.cpp,
// custom_functions_on_spread_branches_see_their_call and
// selective_calls_compute_only_what_they_need). So:
// - A call with inputs (grad(inputs=), backward(inputs=)), in which every
//   formula asks the exec_info, does not spread (GraphTaskBase::
//   may_spread, for a graph type with G::needs_call_thread): it runs on
//   its coordinator as with one worker.
// - In another spread call, the nodes that run user code (hooks, custom
//   Functions: G::needs_call_thread) run on the coordinator, as joining
//   nodes do (ExecInfo::on_coordinator): their gradients travel to it, and
//   share_ready_work never hands them away. libtorch's own formulas run on
//   any lane: with an empty exec_info, as without a GraphTask, they compute
//   every output, the same as on the coordinator.
// A CPU worker then runs no user code, so it never makes a nested call and
// never has another call's GraphTask set. (A nested call made by code that
// is not a node, a saved tensor's unpack hook, is coordinated by the lane
// that runs it and does not spread: Note [Nested calls stay on one lane].)
// actorgrad's own graphs set everything their nodes read around each node
// (ActorgradGraph::run_scope), on any thread.

// Note [Nested calls stay on one lane]
// A call made inside a node (reentrant backward: checkpointing) runs all its
// nodes on the lane that coordinates it, as with one worker: it never spreads
// (Runner::coordinate_here checks GraphTaskBase::reentrant_depth). The bridge
// runs a nested call in a libtorch GraphTask of its own, current on its
// coordinator's thread while it runs (Note [Nodes that need their call's
// thread]), and a lane's loop runs whatever its heap holds. A nested call
// that spreads waits for its other lanes, and meanwhile its coordinator may
// run nodes of other calls inside it: the outer calls' nodes left in its heap
// (lower reentrant depth: they run once the inner frame has nothing ready),
// or other nested calls' nodes handed to it. Those nodes read the nested
// call's exec_info, which does not list their next nodes, so libtorch's
// formulas did not compute those outputs: an undefined gradient, which adds
// nothing. That is what made 3 to 16 of 30 checkpointed calls (10 to 70
// levels, ctest's .cpu_workers_2 settings,
// repeated_checkpointed_calls_all_match_stock) give wrong gradients when
// nested calls spread: in each failing call the CosBackward0 of some levels
// ran under another call's libtorch GraphTask (logged from
// TorchGraph::call_function: a node missing from the current
// get_current_graph_task_exec_info; they were the outermost levels', whose
// Cos nodes wait in the heap longest), and exactly those levels' gradients
// lacked the one term that flows through cos(x) (-sin(x) * c * g; the two
// others right to 1e-9); no other call differed. A nested call that does not
// spread never waits for another lane: until it ends, one of its own nodes is
// ready here or running, so its coordinator runs no other call's node inside
// it. To spread nested calls, a lane inside a nested call's frame would have
// to run only that call's nodes, and no lane could then be handed a task it
// would not run without risking a wait on each other; actorgrad cannot set
// libtorch's GraphTask on another thread instead. The top-level call still
// spreads its libtorch formulas; its checkpoint nodes, user code, run on its
// coordinator one after another, each with its nested call.

/// Hands a share of `heap`'s ready tasks of the spread call on its top to
/// that call's lanes that wait with nothing to run, in msg::Tasks (Note
/// [Parallel CPU nodes]). `self` is the lane sharing, `lane` its number in
/// that call (Note [Lanes that stay]), `actor` it as observers see it.
/// Call with two or more tasks in `heap`, a spread call's on top.
void share_ready_work(EngineCore& core, const EngineActor* self, const ObservedActor& actor,
                      ReadyHeap& heap, unsigned lane);

/// Posts ready task `t` of a spread call, made ready on lane `lane`, to the
/// lane that ran its node last time, if another (Note [Lanes that stay]);
/// returns false, with `t` untouched, when it stays. `actor` is the sender
/// as observers see it.
bool send_to_last_lane(EngineCore& core, const ObservedActor& actor, ReadyTask& t, unsigned lane);

/// The CPU lane of CPU worker `self` (1 for the first of
/// EngineCore::cpu_workers), 0 for an actor that is none.
unsigned lane_of_worker(const EngineCore& core, const EngineActor* self);

} // namespace actorgrad::detail
