#include "providers/service_account.hpp"
#include "support/jws_test_keys.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::providers;
using namespace herald::test;
namespace json = boost::json;

namespace {

constexpr const char* fcm_scope = "https://www.googleapis.com/auth/firebase.messaging";

/// A key file as the Google Cloud console issues it, fields herald ignores included.
json::object key_file(const std::string& pem) {
  return {{"type", "service_account"},
          {"project_id", "herald-test"},
          {"private_key_id", "0123456789abcdef0123456789abcdef01234567"},
          {"private_key", pem},
          {"client_email", "herald@herald-test.iam.gserviceaccount.com"},
          {"client_id", "123456789012345678901"},
          {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
          {"token_uri", "https://oauth2.googleapis.com/token"},
          {"auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"},
          {"client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/herald"},
          {"universe_domain", "googleapis.com"}};
}

const std::string& rsa_pem() {
  static const std::string pem = private_key_pem(shared_rsa_key());
  return pem;
}

service_account parse(const json::object& file) {
  std::string problem;
  auto account = parse_service_account(json::serialize(file), &problem);
  BOOST_REQUIRE_MESSAGE(account.has_value(), "refused: " << problem);
  return std::move(*account);
}

/// Why `text` is refused; fails the test when it is accepted or the reason could leak the key.
std::string refusal(const std::string& text) {
  std::string problem;
  BOOST_TEST(!parse_service_account(text, &problem).has_value());
  BOOST_TEST(!problem.empty());
  BOOST_TEST(problem.find('\n') == std::string::npos, "reason spans lines: " << problem);
  BOOST_TEST(!quotes_pem_body(problem, rsa_pem()), "reason quotes the key: " << problem);
  return problem;
}

std::string refusal(const json::object& file) {
  return refusal(json::serialize(file));
}

} // namespace

BOOST_AUTO_TEST_SUITE(service_account_tests)

BOOST_AUTO_TEST_CASE(a_key_file_as_google_issues_it_is_read) {
  const auto account = parse(key_file(rsa_pem()));
  BOOST_TEST(account.project_id == "herald-test");
  BOOST_TEST(account.private_key_id == "0123456789abcdef0123456789abcdef01234567");
  BOOST_TEST(account.client_email == "herald@herald-test.iam.gserviceaccount.com");
  BOOST_TEST(account.token_uri == "https://oauth2.googleapis.com/token");
  BOOST_TEST(account.private_key.algorithm() == "RS256");
}

BOOST_AUTO_TEST_CASE(the_assertion_is_an_rs256_jwt_the_public_key_verifies) {
  const auto account = parse(key_file(rsa_pem()));
  const auto assertion = oauth_assertion(account, 1700000000, fcm_scope);
  BOOST_TEST(verify_jws(public_key_pem(shared_rsa_key()), assertion));
  BOOST_TEST(jws_json(assertion, 0) ==
             (json::object{{"alg", "RS256"},
                           {"typ", "JWT"},
                           {"kid", "0123456789abcdef0123456789abcdef01234567"}}));
  BOOST_TEST(jws_json(assertion, 1) ==
             (json::object{{"iss", "herald@herald-test.iam.gserviceaccount.com"},
                           {"scope", fcm_scope},
                           {"aud", "https://oauth2.googleapis.com/token"},
                           {"iat", 1700000000},
                           {"exp", 1700003600}}));
}

BOOST_AUTO_TEST_CASE(the_assertion_follows_the_token_uri_scope_and_clock) {
  auto file = key_file(rsa_pem());
  file["token_uri"] = "http://127.0.0.1:18080/token"; // a fake token server
  const auto account = parse(file);
  const auto assertion = oauth_assertion(account, 0, "scope-a scope-b");
  BOOST_TEST(verify_jws(public_key_pem(shared_rsa_key()), assertion));
  const auto claims = jws_json(assertion, 1);
  BOOST_TEST(claims.at("aud") == "http://127.0.0.1:18080/token");
  BOOST_TEST(claims.at("scope") == "scope-a scope-b");
  BOOST_TEST(claims.at("iat") == 0);
  BOOST_TEST(claims.at("exp") == 3600);
}

BOOST_AUTO_TEST_CASE(each_missing_or_malformed_field_is_named) {
  for (const char* field :
       {"type", "project_id", "private_key_id", "client_email", "token_uri", "private_key"}) {
    auto missing = key_file(rsa_pem());
    missing.erase(field);
    BOOST_TEST(refusal(missing) == std::string(field) + " is missing");
    auto number = key_file(rsa_pem());
    number[field] = 42;
    BOOST_TEST(refusal(number) == std::string(field) + " must be a string");
    auto empty = key_file(rsa_pem());
    empty[field] = "";
    BOOST_TEST(refusal(empty) == std::string(field) + " is empty");
  }
}

BOOST_AUTO_TEST_CASE(only_service_account_files_are_accepted) {
  auto user = key_file(rsa_pem());
  user["type"] = "authorized_user";
  BOOST_TEST(refusal(user) == "type must be \"service_account\"");
  // An authorized-user file has none of the other fields either; its type is what is wrong.
  BOOST_TEST(refusal(R"({"type":"authorized_user","client_id":"x","refresh_token":"y"})") ==
             "type must be \"service_account\"");
  BOOST_TEST(refusal("").rfind("not valid JSON (", 0) == 0);
  BOOST_TEST(refusal(R"({"type": "service_account",)").rfind("not valid JSON (", 0) == 0);
  BOOST_TEST(refusal(R"(["service_account"])") == "not a JSON object");
}

BOOST_AUTO_TEST_CASE(token_uri_must_be_an_http_url) {
  for (const char* bad :
       {"oauth2.googleapis.com/token", "ftp://oauth2.googleapis.com/token", "https://",
        "https:///token", "http://:8080/token", "https://oauth2.googleapis.com/to ken",
        "HTTPS://oauth2.googleapis.com", "https://oauth2.googleapis.com/token\n"}) {
    auto file = key_file(rsa_pem());
    file["token_uri"] = bad;
    BOOST_TEST(refusal(file) == "token_uri must be an http:// or https:// URL", "for " << bad);
  }
}

BOOST_AUTO_TEST_CASE(the_private_key_must_be_a_readable_rsa_key) {
  auto ec = key_file(rsa_pem());
  ec["private_key"] = private_key_pem(generate_ec_key("P-256").get());
  BOOST_TEST(refusal(ec) == "private_key: expected an RSA private key (RS256), got EC");

  auto truncated = key_file(rsa_pem());
  truncated["private_key"] = rsa_pem().substr(0, rsa_pem().size() / 2);
  BOOST_TEST(refusal(truncated) == "private_key: no readable private key in the PEM text");

  auto encrypted = key_file(rsa_pem());
  encrypted["private_key"] = private_key_pem(shared_rsa_key(), pem_form::encrypted_pkcs8);
  BOOST_TEST(refusal(encrypted) ==
             "private_key: the private key is encrypted; herald reads only unencrypted keys");
}

BOOST_AUTO_TEST_SUITE_END()
