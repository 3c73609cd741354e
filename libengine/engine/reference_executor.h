#pragma once
/// @file reference_executor.h
/// The sequential executor: the semantics every other executor is tested against.

#include "libengine/engine/executor.h"

namespace actorgrad {

/// Runs every node on the calling thread from one ready heap, in the ready
/// order. A reentrant call (backward inside a node) runs nested with depth + 1.
class ReferenceExecutor final : public Executor {
public:
  variable_list execute(const edge_list& roots, variable_list root_grads,
                        const ExecuteOptions& options, const edge_list& outputs) override;
};

} // namespace actorgrad
