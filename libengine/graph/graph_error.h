#pragma once
/// @file graph_error.h
/// The exception a define-once Graph reports with.

#include "actorgrad/libengine/engine/errors.h"

namespace actorgrad::define_once {

/// A misuse of a define-once Graph (cycle, missing input value, bad node
/// kind) or a failed op; the message names the nodes involved.
class GraphError : public EngineError {
public:
  using EngineError::EngineError;
};

} // namespace actorgrad::define_once
