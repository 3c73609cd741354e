#pragma once
/// @file graph_task.h
/// The GraphTask of actorgrad's own graphs (see Note [Graph interface]).
/// Internal (libengine/engine/detail/, not installed).

#include "actorgrad/libengine/engine/detail/actorgrad_graph.h"
#include "actorgrad/libengine/engine/detail/basic_graph_task.h"

namespace actorgrad::detail {

/// One backward()/grad() call on actorgrad's Node graph.
using GraphTask = BasicGraphTask<ActorgradGraph>;

/// Instantiated once, in actorgrad_graph.cpp.
extern template class BasicGraphTask<ActorgradGraph>;

} // namespace actorgrad::detail
