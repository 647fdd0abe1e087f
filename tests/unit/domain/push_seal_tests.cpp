#include "domain/push_seal.hpp"

#include <boost/test/unit_test.hpp>

using herald::domain::seal_push;

BOOST_AUTO_TEST_SUITE(push_seal_tests)

BOOST_AUTO_TEST_CASE(a_seal_is_keyed_by_channel_timestamp_and_nonce_and_holds_the_request) {
  const auto seal =
      seal_push("wechat", 1790000000, "n-1", "POST", "<xml/>", std::chrono::seconds{300});
  BOOST_TEST(seal.channel == "wechat");
  BOOST_TEST(seal.signed_at == 1790000000);
  BOOST_TEST(seal.nonce == "n-1");
  // SHA-256 of "POST\n<xml/>" (sha256sum agrees).
  BOOST_TEST(seal.digest == "90afa63b57905ce10f7d500a6d425e69576c5350e7f60196d1d2e3f68a778935");
}

BOOST_AUTO_TEST_CASE(the_method_is_sealed_with_the_body) {
  const auto handshake = seal_push("wechat", 1, "n", "GET", "", std::chrono::seconds{300});
  BOOST_TEST(handshake.digest ==
             "bb94048e39bc5ef4deb3b9856fd12be85dff88f5da2989b1174f63a05fb13ba5");
  BOOST_TEST(seal_push("wechat", 1, "n", "POST", "", std::chrono::seconds{300}).digest !=
             handshake.digest);
}

// A timestamp up to the window ahead is accepted until the window after it, and a node whose
// clock runs up to the window behind accepts it that much later still.
BOOST_AUTO_TEST_CASE(a_seal_is_kept_until_its_timestamp_is_stale_on_every_node) {
  BOOST_TEST(seal_push("wechat", 1000, "n", "GET", "", std::chrono::seconds{300}).kept_until ==
             1600);
  BOOST_TEST(seal_push("wechat", 1000, "n", "GET", "", std::chrono::seconds{5}).kept_until == 1010);
}

BOOST_AUTO_TEST_SUITE_END()
