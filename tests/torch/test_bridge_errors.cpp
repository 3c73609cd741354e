/// @file test_bridge_errors.cpp
/// Errors of libtorch backward calls on the torch bridge (second backward
/// through freed buffers, bad root gradient shape, anomaly-mode NaN, unused
/// input, a custom backward throwing or returning a wrong shape): the same exception
/// type as with the stock engine, its text kept (plus the node that failed,
/// Note [Errors keep their type] in libengine/torch/torch_graph.cpp), and the
/// next backward works.

#define BOOST_TEST_MODULE torch_bridge_errors
#include "tests/support/torch_diff.h" // libtorch, then Boost.Test

#include <functional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace {

const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

template <class E>
std::string text_of(const E& e) {
  if constexpr (std::is_base_of_v<c10::Error, E>)
    return e.what_without_backtrace();
  else
    return e.what();
}

/// What `fails` throws: its exact type and text (fails the test if it
/// throws nothing or no E).
template <class E>
std::pair<std::string, std::string> error_of(const std::function<void()>& fails) {
  try {
    fails();
  } catch (const E& e) {
    return {typeid(e).name(), text_of(e)};
  } catch (const std::exception& e) {
    BOOST_ERROR("another exception type: " << typeid(e).name() << ": " << e.what());
    return {};
  }
  BOOST_ERROR("no exception");
  return {};
}

/// `fails` throws the same type (an E) on both engines; actorgrad's text
/// holds the stock one and `node` (when not empty); afterwards a backward
/// works on actorgrad.
template <class E>
void check_same_error(const std::function<void()>& fails, const std::string& node) {
  const auto [stock_type, stock] = error_of<E>(fails);
  actorgrad::torch::Scope scope(actorgrad::testing::bridge_config());
  const auto [our_type, ours] = error_of<E>(fails);
  BOOST_TEST_MESSAGE("stock: " << stock << "\nactorgrad: " << ours);
  BOOST_CHECK(!stock.empty());
  BOOST_CHECK_EQUAL(our_type, stock_type);
  BOOST_CHECK_MESSAGE(ours.find(stock) != std::string::npos,
                      "stock text '" << stock << "' not in '" << ours << "'");
  if (!node.empty())
    BOOST_CHECK_MESSAGE(ours.find(node) != std::string::npos, "'" << node << "' not in: " << ours);
  const auto calls = actorgrad::torch::stats().calls;
  auto x = torch::ones({3}, f64).requires_grad_(true);
  (x * x).sum().backward();
  BOOST_CHECK(torch::equal(x.grad(), torch::full({3}, 2.0, f64)));
  BOOST_CHECK_GT(actorgrad::torch::stats().calls, calls);
}

/// Its backward returns a gradient of the wrong shape.
struct WrongShape : torch::autograd::Function<WrongShape> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x * 2; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list g) {
    return {torch::ones({5}, f64)};
  }
};

struct Throws : torch::autograd::Function<Throws> {
  static bool c10_error;
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x * 2; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    if (c10_error)
      TORCH_CHECK(false, "custom backward failed (c10)");
    throw std::runtime_error("custom backward failed");
  }
};
bool Throws::c10_error = false;

} // namespace

BOOST_AUTO_TEST_CASE(second_backward_through_freed_buffers) {
  check_same_error<c10::Error>(
    [] {
      auto x = torch::ones({3}, f64).requires_grad_(true);
      auto y = (x.exp() * x).sum();
      y.backward();
      y.backward();
    },
    "MulBackward0");
}

BOOST_AUTO_TEST_CASE(bad_root_gradient_shape) {
  check_same_error<c10::Error>(
    [] {
      auto x = torch::ones({2}, f64).requires_grad_(true);
      (x * 3).backward(torch::ones({3}, f64));
    },
    "");
}

BOOST_AUTO_TEST_CASE(anomaly_mode_names_the_node_that_returned_nan) {
  check_same_error<std::runtime_error>(
    [] {
      torch::autograd::DetectAnomalyGuard anomaly;
      auto x = torch::zeros({2}, f64).requires_grad_(true);
      (x.sqrt() * 0).sum().backward();
    },
    "SqrtBackward0");
}

/// The "Previous calculation was induced by X" lines of the warnings that
/// `body` raises.
std::vector<std::string> parents_warned(const std::function<void()>& body) {
  struct Parents final : c10::WarningHandler {
    void process(const c10::SourceLocation&, const std::string& msg, bool) override {
      const std::string tag = "Previous calculation was induced by ";
      if (const auto at = msg.find(tag); at != std::string::npos)
        names.push_back(msg.substr(at + tag.size(), msg.find('.', at) - at - tag.size()));
    }
    std::vector<std::string> names;
  } parents;
  c10::Warning::WarningHandlerGuard guard(&parents);
  body();
  return parents.names;
}

// Anomaly mode through a double backward: a node made by a backward node
// has that node as its parent, whose forward traceback libtorch prints
// after the failing node's. On the bridge every such node's parent was the
// bridge's own libtorch node ("actorgrad::TorchBridge").
BOOST_AUTO_TEST_CASE(anomaly_mode_names_the_node_that_made_the_failing_one) {
  const auto nan_in_double_backward = [] {
    torch::autograd::DetectAnomalyGuard anomaly;
    auto x = torch::zeros({1}, f64).requires_grad_(true);
    auto gx = torch::autograd::grad({x.sqrt().sum()}, {x}, {}, true, true)[0];
    try {
      torch::autograd::grad({(gx * 0).sum()}, {x});
      BOOST_ERROR("no NaN error");
    } catch (const std::runtime_error& e) {
      BOOST_CHECK_MESSAGE(std::string(e.what()).find("DivBackward0") != std::string::npos,
                          e.what());
    }
  };
  const auto stock = parents_warned(nan_in_double_backward);
  actorgrad::torch::Scope scope(actorgrad::testing::bridge_config());
  const auto calls = actorgrad::torch::stats().calls;
  const auto ours = parents_warned(nan_in_double_backward);
  BOOST_CHECK_EQUAL(actorgrad::torch::stats().calls, calls + 2);
  BOOST_TEST(stock == std::vector<std::string>{"SqrtBackward0"}, boost::test_tools::per_element());
  BOOST_TEST(ours == stock, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unused_input_without_allow_unused) {
  check_same_error<c10::Error>(
    [] {
      auto x = torch::ones({2}, f64).requires_grad_(true);
      auto unused = torch::ones({2}, f64).requires_grad_(true);
      torch::autograd::grad({(x * x).sum()}, {x, unused});
    },
    "");
}

BOOST_AUTO_TEST_CASE(exception_in_a_custom_backward) {
  Throws::c10_error = false;
  check_same_error<std::runtime_error>(
    [] {
      auto x = torch::ones({2}, f64).requires_grad_(true);
      Throws::apply(x.exp()).sum().backward();
    },
    "CppNode<(anonymous namespace)::Throws>");
  Throws::c10_error = true;
  check_same_error<c10::Error>(
    [] {
      auto x = torch::ones({2}, f64).requires_grad_(true);
      Throws::apply(x.exp()).sum().backward();
    },
    "CppNode<(anonymous namespace)::Throws>");
}

BOOST_AUTO_TEST_CASE(a_node_returning_a_gradient_of_the_wrong_shape) {
  check_same_error<c10::Error>(
    [] {
      auto x = torch::ones({2}, f64).requires_grad_(true);
      WrongShape::apply(x.exp()).sum().backward();
    },
    "Function torch::autograd::CppNode<(anonymous namespace)::WrongShape> returned an invalid "
    "gradient at index 0 - got [5] but expected shape compatible with [2]");
}
