#pragma once
/// @file nodes_in_graph.h
/// For torch._C._will_engine_execute_node (the Python bridge): the set of
/// nodes it reads, filled on demand. No libtorch header, so that code using
/// the name `torch` for actorgrad::torch can include it.

namespace actorgrad::torch::detail {

/// Fills the nodes_in_graph_ of libtorch's current GraphTask when it is
/// that of a call the bridge runs on this thread (Note [Nodes in graph on
/// demand] in bridge_engine.cpp); else does nothing.
void fill_current_nodes_in_graph();

} // namespace actorgrad::torch::detail
