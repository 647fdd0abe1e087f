#include "domain/keys.hpp"

#include <set>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

namespace {

const id_secret secret{"installation-secret-for-tests"};

message_key order_key() {
  return message_key{"default", "ORDER_SHIPPED", "order-1", "u-123"};
}

bool is_lower_hex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(keys_tests)

BOOST_AUTO_TEST_CASE(encode_length_prefixes_every_field) {
  BOOST_TEST(encode(order_key()) == "7:default13:ORDER_SHIPPED7:order-15:u-123");
  BOOST_TEST(encode(task_key{order_key(), "sms"}) ==
             "7:default13:ORDER_SHIPPED7:order-15:u-1233:sms");
  BOOST_TEST(encode(message_key{"", "", "", ""}) == "0:0:0:0:");
}

BOOST_AUTO_TEST_CASE(encode_is_unambiguous_where_plain_joining_is_not) {
  const message_key a{"t", "a:b", "c", "u"};
  const message_key b{"t", "a", "b:c", "u"};
  BOOST_TEST(encode(a) != encode(b));
  BOOST_TEST(message_id_for(a, secret) != message_id_for(b, secret));

  // Digits inside a field cannot pose as a length prefix either.
  const message_key c{"t", "1:x", "", "u"};
  const message_key d{"t", "", "1:x", "u"};
  BOOST_TEST(encode(c) != encode(d));

  const task_key e{message_key{"t", "b", "i", "u:sms"}, ""};
  const task_key f{message_key{"t", "b", "i", "u"}, "sms"};
  BOOST_TEST(encode(e) != encode(f));
  BOOST_TEST(task_id_for(e, secret) != task_id_for(f, secret));
}

BOOST_AUTO_TEST_CASE(ids_are_deterministic) {
  const task_key key{order_key(), "sms"};
  BOOST_TEST(message_id_for(order_key(), secret) == message_id_for(order_key(), secret));
  BOOST_TEST(task_id_for(key, secret) == task_id_for(task_key{order_key(), "sms"}, secret));
  BOOST_TEST(provider_request_id_for(key, secret) ==
             provider_request_id_for(task_key{order_key(), "sms"}, secret));
}

BOOST_AUTO_TEST_CASE(ids_have_their_prefix_and_length) {
  const task_key key{order_key(), "sms"};
  const std::string message_id = message_id_for(order_key(), secret);
  const std::string task_id = task_id_for(key, secret);
  const std::string request_id = provider_request_id_for(key, secret);
  BOOST_TEST(message_id.size() == 4u + 24u);
  BOOST_TEST(message_id.rfind("msg_", 0) == 0u);
  BOOST_TEST(is_lower_hex(message_id.substr(4)));
  BOOST_TEST(task_id.size() == 4u + 24u);
  BOOST_TEST(task_id.rfind("tsk_", 0) == 0u);
  BOOST_TEST(is_lower_hex(task_id.substr(4)));
  BOOST_TEST(request_id.size() == 4u + 32u);
  BOOST_TEST(request_id.rfind("hrq_", 0) == 0u);
  BOOST_TEST(is_lower_hex(request_id.substr(4)));
}

BOOST_AUTO_TEST_CASE(derivation_is_pinned) {
  // HMAC-SHA256(secret, "message\n" | "task\n" | "provider-request\n" + encoded key),
  // computed once outside herald; a change here would split every stored key
  // from its new id, so it must be deliberate.
  const task_key key{order_key(), "sms"};
  BOOST_TEST(message_id_for(order_key(), secret) == "msg_7c5fe38ef3f9cf512784d676");
  BOOST_TEST(task_id_for(key, secret) == "tsk_74b3dbe7d33806766c6befb6");
  BOOST_TEST(provider_request_id_for(key, secret) == "hrq_997ec04aab83cf2cf234179b26167431");
  BOOST_TEST(stable_hash(encode(order_key())) == 0xa445a10befe30496ULL);
  // SHA-256("") starts e3b0c44298fc1c14: big-endian first eight bytes.
  BOOST_TEST(stable_hash("") == 0xe3b0c44298fc1c14ULL);
}

// The MAC context of a thread is keyed once and re-keyed when another secret comes (tests and
// tools hold several installations in one process): each id is still its secret's own.
BOOST_AUTO_TEST_CASE(alternating_secrets_on_one_thread_give_each_secrets_ids) {
  const task_key key{order_key(), "sms"};
  const id_secret other{"another-installation"};
  const auto others = task_id_for(key, other);
  BOOST_TEST(task_id_for(key, secret) == "tsk_74b3dbe7d33806766c6befb6");
  BOOST_TEST(task_id_for(key, other) == others);
  BOOST_TEST(message_id_for(order_key(), secret) == "msg_7c5fe38ef3f9cf512784d676");
  BOOST_TEST(others != "tsk_74b3dbe7d33806766c6befb6");
}

BOOST_AUTO_TEST_CASE(ids_differ_per_channel_tenant_and_field) {
  const message_key base = order_key();
  std::set<std::string> ids;
  for (const char* channel : {"sms", "wechat", "app", "email"})
    ids.insert(task_id_for(task_key{base, channel}, secret));
  BOOST_TEST(ids.size() == 4u);

  message_key other_tenant = base;
  other_tenant.tenant = "acme";
  BOOST_TEST(message_id_for(other_tenant, secret) != message_id_for(base, secret));
  BOOST_TEST(task_id_for(task_key{other_tenant, "sms"}, secret) !=
             task_id_for(task_key{base, "sms"}, secret));

  message_key other_user = base;
  other_user.user_id = "u-124";
  BOOST_TEST(message_id_for(other_user, secret) != message_id_for(base, secret));

  message_key other_biz = base;
  other_biz.biz_id = "order-2";
  BOOST_TEST(message_id_for(other_biz, secret) != message_id_for(base, secret));
}

BOOST_AUTO_TEST_CASE(ids_cannot_be_computed_without_the_secret) {
  // What ids were before they were keyed: anyone knowing the business data could compute them.
  BOOST_TEST(message_id_for(order_key(), secret) != "msg_a445a10befe3049688c226c0");
  BOOST_TEST(task_id_for(task_key{order_key(), "sms"}, secret) != "tsk_ed48193f7f3777a8d990db72");
  const id_secret other{"another-installation"};
  BOOST_TEST(message_id_for(order_key(), other) != message_id_for(order_key(), secret));
  BOOST_TEST(task_id_for(task_key{order_key(), "sms"}, other) !=
             task_id_for(task_key{order_key(), "sms"}, secret));
  BOOST_TEST(provider_request_id_for(task_key{order_key(), "sms"}, other) !=
             provider_request_id_for(task_key{order_key(), "sms"}, secret));
}

BOOST_AUTO_TEST_CASE(provider_request_id_is_not_the_task_id) {
  const task_key key{order_key(), "sms"};
  BOOST_TEST(provider_request_id_for(key, secret).substr(4, 24) !=
             task_id_for(key, secret).substr(4));
  BOOST_TEST(provider_request_id_for(key, secret) !=
             provider_request_id_for(task_key{order_key(), "app"}, secret));
}

BOOST_AUTO_TEST_CASE(shard_is_in_range_and_stable) {
  std::set<std::size_t> seen;
  for (int i = 0; i < 200; ++i) {
    const message_key key{"default", "T", "id-" + std::to_string(i), "u"};
    const std::size_t shard = shard_of(key, 8);
    BOOST_TEST(shard < 8u);
    BOOST_TEST(shard == shard_of(key, 8));
    BOOST_TEST(shard == stable_hash(encode(key)) % 8);
    seen.insert(shard);
  }
  BOOST_TEST(seen.size() == 8u); // 200 keys reach every shard
  BOOST_TEST(shard_of(order_key(), 1) == 0u);
  BOOST_TEST(shard_of(order_key(), 0) == 0u); // no shards: no division by zero
}

BOOST_AUTO_TEST_SUITE_END()
