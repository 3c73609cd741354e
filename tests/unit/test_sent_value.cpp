/// @file test_sent_value.cpp
/// SentValue (libengine/engine/detail/sent_value.h): the value a message carries
/// inline is constructed, copied, moved and destroyed exactly once each.
#define BOOST_TEST_MODULE sent_value
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>

#include "actorgrad/libengine/engine/detail/sent_value.h"

using actorgrad::detail::SentValue;

namespace {

/// Counts the live copies of a value through a shared counter.
struct Counted {
  explicit Counted(std::shared_ptr<int> live, std::string text)
    : live(std::move(live)), text(std::move(text)) {
    ++*this->live;
  }
  Counted(const Counted& o) : live(o.live), text(o.text) { ++*live; }
  Counted(Counted&& o) noexcept : live(o.live), text(std::move(o.text)) { ++*live; }
  ~Counted() { --*live; }
  std::shared_ptr<int> live;
  std::string text;
};

} // namespace

BOOST_AUTO_TEST_CASE(holds_copies_moves_and_destroys_once) {
  auto live = std::make_shared<int>(0);
  {
    SentValue a(Counted(live, "gradient"));
    BOOST_TEST(*live == 1); // the temporary is gone, the held value is live
    SentValue b(a);
    BOOST_TEST(*live == 2);
    BOOST_TEST(b.get<Counted>().text == "gradient");
    SentValue c(std::move(a)); // `a` keeps a moved-from value until it goes
    BOOST_TEST(*live == 3);
    BOOST_TEST(c.get<Counted>().text == "gradient");
    SentValue d;
    d = b; // copy assignment into an empty value
    BOOST_TEST(*live == 4);
    d = std::move(c); // move assignment over a held value destroys the old one
    BOOST_TEST(*live == 4);
    BOOST_TEST(d.get<Counted>().text == "gradient");
    d = SentValue(); // assigning an empty value empties it
    BOOST_TEST(*live == 3);
  }
  BOOST_TEST(*live == 0);
}
