#include "domain/api_key.hpp"

#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

BOOST_AUTO_TEST_SUITE(api_key_tests)

BOOST_AUTO_TEST_CASE(scopes_parse_and_print) {
  auto all = parse_scopes("ops,admin,submit,read");
  BOOST_REQUIRE(all);
  BOOST_TEST(to_string(*all) == "submit,read,admin,ops");
  BOOST_TEST((*all == scope_set::all()));
  BOOST_TEST(!(*parse_scopes("admin,submit,read") == scope_set::all()));
  auto read = parse_scopes("read");
  BOOST_REQUIRE(read);
  BOOST_TEST(read->contains(scope::read));
  BOOST_TEST(!read->contains(scope::admin));
  BOOST_TEST(!read->contains(scope::submit));
  // admin implies nothing else; nor does ops.
  BOOST_TEST(!parse_scopes("admin")->contains(scope::read));
  BOOST_TEST(!parse_scopes("admin")->contains(scope::ops));
  BOOST_TEST(!parse_scopes("ops")->contains(scope::read));
}

BOOST_AUTO_TEST_CASE(bad_scope_lists_are_refused) {
  for (const char* text :
       {"", ",", "read,", "read,read", "Read", "write", "read, admin", "ops,ops", "operator"})
    BOOST_TEST(!parse_scopes(text), text);
}

BOOST_AUTO_TEST_CASE(key_text_carries_its_id) {
  const std::string id(16, 'a');
  const std::string secret(64, '0');
  auto key = api_key_text(id, secret);
  BOOST_TEST(key == "hk_" + id + "_" + secret);
  BOOST_TEST(api_key_id(key).value_or("") == id);
}

BOOST_AUTO_TEST_CASE(malformed_key_texts_have_no_id) {
  const std::string good = api_key_text(std::string(16, 'a'), std::string(64, '0'));
  BOOST_TEST(!api_key_id(""));
  BOOST_TEST(!api_key_id(good.substr(1)));
  BOOST_TEST(!api_key_id(good + "0"));
  BOOST_TEST(!api_key_id("hx" + good.substr(2)));
  std::string upper = good;
  upper[5] = 'A';
  BOOST_TEST(!api_key_id(upper));
  std::string no_separator = good;
  no_separator[19] = '0';
  BOOST_TEST(!api_key_id(no_separator));
}

BOOST_AUTO_TEST_CASE(the_hash_is_sha256_hex_of_the_whole_key) {
  // SHA-256("abc"), FIPS 180-2 appendix B.1.
  BOOST_TEST(api_key_hash("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(api_key_hash("hk_a") != api_key_hash("hk_b"));
}

BOOST_AUTO_TEST_CASE(hashes_compare_exactly) {
  auto hash = api_key_hash("key");
  BOOST_TEST(same_api_key_hash(hash, api_key_hash("key")));
  BOOST_TEST(!same_api_key_hash(hash, api_key_hash("kez")));
  BOOST_TEST(!same_api_key_hash(hash, hash.substr(1)));
  BOOST_TEST(!same_api_key_hash(hash, ""));
}

BOOST_AUTO_TEST_CASE(hex_is_lower_case_two_digits_a_byte) {
  BOOST_TEST(to_hex(std::string("\x00\x0f\xa0\xff", 4)) == "000fa0ff");
}

BOOST_AUTO_TEST_SUITE_END()
