#include "actorgrad/libengine/graph/random_graph.h"

#include <random>
#include <string>

#include "actorgrad/libengine/graph/graph_ops.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::define_once {

RandomGraph make_random_graph(Graph& g, const RandomGraphSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  RandomGraph out;
  std::vector<NodeId> lane_tail;
  for (std::size_t l = 0; l < spec.lanes; ++l) {
    const NodeId in = g.add_input(
      "in" + std::to_string(l), Tensor::uniform(spec.value_shape, -1.0, 1.0, spec.seed * 1000 + l));
    out.inputs.push_back(in);
    out.all.push_back(in);
    lane_tail.push_back(in);
  }
  for (std::size_t i = spec.lanes; i < spec.nodes; ++i) {
    const std::size_t lane = i % spec.lanes;
    const NodeId prev = lane_tail[lane];
    NodeId id;
    if (coin(rng) < spec.cross_link) {
      const std::size_t other = (lane + (coin(rng) < 0.5 ? 1 : spec.lanes - 1)) % spec.lanes;
      id = coin(rng) < 0.5 ? g.add_op("tanh_add", {prev, lane_tail[other]},
                                      [](const variable_list& v) {
                                        return actorgrad::tanh(actorgrad::add(v[0], v[1]));
                                      })
                           : mul(g, prev, lane_tail[other]);
    } else {
      id = coin(rng) < 0.5 ? tanh(g, prev) : affine(g, prev, 0.9, 0.05);
    }
    out.all.push_back(id);
    lane_tail[lane] = id;
  }
  return out;
}

} // namespace actorgrad::define_once
