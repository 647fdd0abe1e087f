#include "providers/jwt.hpp"
#include "support/jws_test_keys.hpp"

#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::providers;
using namespace herald::test;
namespace json = boost::json;

namespace {

// The RSA key of RFC 7515 Appendix A.2 (published there as a JWK), written as PKCS#8.
constexpr const char* rfc7515_rsa_key = R"(-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCh+BYK4uPJtGXO
jS1lYmM2K5J9vinh8CR3/BYlzJChNuOL2TSXxbbqY913EeZ8dCn5VrD7io8ImtxL
aYk8wTM/U+3QGbh3hCUv7JFP5IV3aVlL6kKA0ywPVb9ilE8TA5a8bpvfbr3SvaNn
juygxmj3AbONv/s4yDQs4v5tJ/reSlpIdJed1LnPmt7Ex1sFhSwsD174pcF1A5L5
ROjtZMEQxrZHYJqkeDrrnGya11UxMFBji4NmXG9veoKjlnAqH2QbgtPr8jkiGUkf
toaHLFcW9Qr4NY2ai50Xw0Byj3+H2JoY2PyrZ62EWQwuz3WTOTY8BwNNb2BvniHg
VFbK5emhAgMBAAECggEAEq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyW
PEAeP88vLNO97IjlA7/GQ5sLKMgvfTeXZx9SE+7YwVol2NXOoAJe46sui395IW/G
O+pWJ1O0BkTGoVEn2bKVRUCgu+GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzj
kn439X0M/V51gfpRLI9JYanrC4D4qAdGcopV/0ZHHzQlBjudU2QvXt4ehNYTCBr6
XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl/x/jTj3ccPDVZFD9pIuhLhBOneufuBiB
4cS98l2SR/RQyGWSeWjnczT0QU91p1DhOVRuOopznQKBgQDgHMQQ60imZV1URk0K
pLttoLhyt3SmqdEf/kgHePDdtzEafpAu+cS191R2JiuoF2yzWXnwFDcqGigp5BNr
0AHQfD8/Lk8l1Mk09jxxCfui5nYooNyac8YFjm3vItzVCVDnEd3BbVWG8qf6deqE
lMGAg+C2V0L4oNXnP7LZcPAZRwKBgQC5A8R+CZW2MvRTLLHzwZkUXV866cff7tx6
kqa0finGG0KgeqlaZPxgCZnFp7AeAcCMtiynVlJ7vMVgePsLq6XtON4tB5kP9jAP
rq3rbAOal78eUH5OcED6eNuCV8ixEu1eWcPNCS/l1OW1EnXUEoEHKl54Xrrz2uNw
kgMTP1FZ1wKBgAcCn1dwJKufzBWQxWQp1vsM5fggqPN1qGb5y0MAk3g7/Ls5bkUp
5u9SN0Ai3Ya6hNnvWJMb7sXQX6U/zyO2M/hTip7tUeh7CXgwo59dkpN75gJLVds2
9+DAncu3KXU4f2Fa+7bLNrur53k8KwPOq2bbuTG69QtV7Jr5MR0AHWKNAoGBAIf/
evpitUf+4JYbLpvNXWcY052Mpz22aR84mY3nh3F2LF2mjMJDpTg7FmuyPcVw6EcG
yoAe9fa65iNqCq+jdw6PVNGo2hxfjSiZ8IIzHdsPXI89//pMjZcQK9r+CCoRjaZj
OYiIDktVWZzmevJuv6WywUqd57LE3Zar3dLSIkx1AoGAIYd7DHOhrWvxkwPQsRM2
tOgrjbcrfvtQJipd+DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd/QJQ3
ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp/gh6A56
03k2+ZQwVK0JKSHuLFkuQ3U=
-----END PRIVATE KEY-----
)";

signing_key load(const std::string& pem, key_kind kind) {
  std::string problem;
  auto key = load_private_key(pem, kind, &problem);
  BOOST_REQUIRE_MESSAGE(key.has_value(), "refused: " << problem);
  return *key;
}

/// The reason a key is refused for; fails the test when it is accepted.
std::string refusal(const std::string& pem, key_kind kind) {
  std::string problem;
  BOOST_TEST(!load_private_key(pem, kind, &problem).has_value());
  BOOST_TEST(!problem.empty());
  BOOST_TEST(problem.find('\n') == std::string::npos, "reason spans lines: " << problem);
  BOOST_TEST(!quotes_pem_body(problem, pem), "reason quotes the key: " << problem);
  return problem;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const json::object sample_claims{{"iss", "herald@example.iam.gserviceaccount.com"},
                                 {"iat", 1700000000},
                                 {"exp", 1700003600},
                                 {"note", "Grüße, 你好 \"quoted\" / slash"}};

} // namespace

BOOST_AUTO_TEST_SUITE(jwt_tests)

// RFC 4648 §10's vectors, unpadded, and RFC 7515 Appendix C's, which needs both '-' and '_'.
BOOST_AUTO_TEST_CASE(base64url_matches_the_rfc_vectors) {
  const std::vector<std::pair<std::string, std::string>> vectors{
      {"", ""},
      {"f", "Zg"},
      {"fo", "Zm8"},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg"},
      {"fooba", "Zm9vYmE"},
      {"foobar", "Zm9vYmFy"},
      {"\x03\xec\xff\xe0\xc1", "A-z_4ME"},
      {"\xfb\xff", "-_8"}};
  for (const auto& [bytes, text] : vectors) {
    BOOST_TEST(base64url_encode(bytes) == text);
    const auto decoded = base64url_decode(text);
    BOOST_REQUIRE(decoded.has_value());
    BOOST_TEST(*decoded == bytes);
  }
}

BOOST_AUTO_TEST_CASE(base64url_round_trips_every_byte_at_every_offset) {
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes.push_back(static_cast<char>(i));
  for (std::size_t length = 0; length <= bytes.size(); ++length) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
      const std::string slice = bytes.substr(offset, length);
      const std::string text = base64url_encode(slice);
      BOOST_TEST(text.find_first_of("+/=") == std::string::npos);
      const auto decoded = base64url_decode(text);
      BOOST_REQUIRE(decoded.has_value());
      BOOST_TEST(*decoded == slice);
    }
  }
}

BOOST_AUTO_TEST_CASE(base64url_decode_refuses_malformed_text) {
  for (const char* bad : {"Zg==", "Zm8=",     // padding
                          "Zm9v+", "Zm9v/A",  // the standard alphabet
                          "Z", "Zm9vY",       // a length no encoder writes
                          "Zh", "Zm9", "Zm-", // spare bits not zero ("Zg", "Zm8" are canonical)
                          "Zm 9v", "Zm9v\n", "Zm9v.", "Zm\x80v"})
    BOOST_TEST(!base64url_decode(bad).has_value(), "accepted " << bad);
}

// RFC 7515 Appendix A.2: RS256 is deterministic, so the RFC's signature must come out exactly.
BOOST_AUTO_TEST_CASE(rs256_signs_the_rfc_7515_example_exactly) {
  const auto key = load(rfc7515_rsa_key, key_kind::rsa);
  BOOST_TEST(key.algorithm() == "RS256");
  const std::string signing_input =
      "eyJhbGciOiJSUzI1NiJ9."
      "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cn"
      "VlfQ";
  BOOST_TEST(
      base64url_encode(key.sign(signing_input)) ==
      "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_"
      "O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIAR"
      "NPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvh"
      "J1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw");
  // The JSON header of the same example, {"alg":"RS256"}, is what sign_jwt writes for it.
  const auto token = sign_jwt(key, {}, {{"iss", "joe"}});
  BOOST_TEST(token.substr(0, token.find('.')) == "eyJhbGciOiJSUzI1NiJ9");
}

BOOST_AUTO_TEST_CASE(rs256_tokens_verify_with_the_public_key) {
  const auto public_pem = public_key_pem(shared_rsa_key());
  for (const auto form : {pem_form::pkcs8, pem_form::traditional}) {
    const auto pem = private_key_pem(shared_rsa_key(), form);
    BOOST_TEST(contains(pem, form == pem_form::pkcs8 ? "BEGIN PRIVATE KEY" : "BEGIN RSA PRIVATE"));
    const auto key = load(pem, key_kind::rsa);
    const auto token = sign_jwt(key, {{"typ", "JWT"}, {"kid", "key-1"}}, sample_claims);
    BOOST_TEST(verify_jws(public_pem, token));
    BOOST_TEST(jws_json(token, 0) ==
               (json::object{{"alg", "RS256"}, {"typ", "JWT"}, {"kid", "key-1"}}));
    BOOST_TEST(jws_json(token, 1) == sample_claims);
    BOOST_TEST(split_jws(token)->signature.size() == 256u); // a 2048-bit modulus

    // The verifier is not a rubber stamp: any other claims fail it.
    const auto other = sign_jwt(key, {}, {{"iss", "someone else"}});
    const auto forged = token.substr(0, token.find('.') + 1) +
                        other.substr(other.find('.') + 1, other.rfind('.') - other.find('.') - 1) +
                        token.substr(token.rfind('.'));
    BOOST_TEST(!verify_jws(public_pem, forged));
  }
}

BOOST_AUTO_TEST_CASE(es256_tokens_verify_with_the_public_key) {
  const auto generated = generate_ec_key("P-256");
  const auto public_pem = public_key_pem(generated.get());
  for (const auto form : {pem_form::pkcs8, pem_form::traditional}) {
    const auto pem = private_key_pem(generated.get(), form);
    BOOST_TEST(contains(pem, form == pem_form::pkcs8 ? "BEGIN PRIVATE KEY" : "BEGIN EC PRIVATE"));
    const auto key = load(pem, key_kind::ec_p256);
    BOOST_TEST(key.algorithm() == "ES256");
    const auto token = sign_jwt(key, {{"kid", "ABC123DEFG"}}, sample_claims);
    BOOST_TEST(verify_jws(public_pem, token));
    BOOST_TEST(jws_json(token, 0) == (json::object{{"alg", "ES256"}, {"kid", "ABC123DEFG"}}));
    BOOST_TEST(jws_json(token, 1) == sample_claims);
    BOOST_TEST(split_jws(token)->signature.size() == 64u);
    // A key of its own kind but not this one does not verify it.
    BOOST_TEST(!verify_jws(public_key_pem(generate_ec_key("P-256").get()), token));
  }
}

// DER drops leading zero bytes of r and s; about 1 in 256 signatures has a short r, as many a
// short s. Sign until both have turned up (hundreds of signatures, expected) and check every
// one verifies after the conversion back to DER.
BOOST_AUTO_TEST_CASE(es256_signatures_left_pad_short_r_and_s) {
  const auto generated = generate_ec_key("P-256");
  const auto public_pem = public_key_pem(generated.get());
  const auto key = load(private_key_pem(generated.get()), key_kind::ec_p256);
  bool short_r = false;
  bool short_s = false;
  int signatures = 0;
  for (; signatures < 20000 && !(short_r && short_s); ++signatures) {
    const auto token = sign_jwt(key, {}, {{"n", signatures}});
    const auto signature = split_jws(token)->signature;
    BOOST_REQUIRE_EQUAL(signature.size(), 64u);
    short_r = short_r || signature[0] == '\0';
    short_s = short_s || signature[32] == '\0';
    BOOST_REQUIRE_MESSAGE(verify_jws(public_pem, token), "signature " << signatures);
  }
  BOOST_TEST_MESSAGE("signatures until a short r and a short s: " << signatures);
  BOOST_TEST(short_r);
  BOOST_TEST(short_s);
}

BOOST_AUTO_TEST_CASE(the_header_names_the_keys_algorithm_first) {
  const auto rsa = load(private_key_pem(shared_rsa_key()), key_kind::rsa);
  const auto rsa_token = sign_jwt(rsa, {{"typ", "JWT"}, {"alg", "none"}}, {});
  BOOST_TEST(jws_json(rsa_token, 0) == (json::object{{"alg", "RS256"}, {"typ", "JWT"}}));
  BOOST_TEST(split_jws(rsa_token)->header == R"({"alg":"RS256","typ":"JWT"})");
  BOOST_TEST(verify_jws(public_key_pem(shared_rsa_key()), rsa_token));

  const auto ec = generate_ec_key("P-256");
  const auto ec_token =
      sign_jwt(load(private_key_pem(ec.get()), key_kind::ec_p256), {{"alg", "RS256"}}, {});
  BOOST_TEST(split_jws(ec_token)->header == R"({"alg":"ES256"})");
  BOOST_TEST(verify_jws(public_key_pem(ec.get()), ec_token));
}

BOOST_AUTO_TEST_CASE(copies_of_a_key_outlive_the_original) {
  std::vector<signing_key> copies;
  {
    const auto original = load(private_key_pem(shared_rsa_key()), key_kind::rsa);
    copies.push_back(original);
    copies.push_back(signing_key(original));
  }
  for (const auto& copy : copies)
    BOOST_TEST(verify_jws(public_key_pem(shared_rsa_key()), sign_jwt(copy, {}, sample_claims)));
}

BOOST_AUTO_TEST_CASE(keys_of_another_type_or_curve_are_refused) {
  const auto p256 = private_key_pem(generate_ec_key("P-256").get());
  const auto rsa = private_key_pem(shared_rsa_key());
  const auto ed25519 = private_key_pem(generate_ed25519_key().get());

  BOOST_TEST(refusal(p256, key_kind::rsa) == "expected an RSA private key (RS256), got EC");
  BOOST_TEST(refusal(private_key_pem(generate_ec_key("P-256").get(), pem_form::traditional),
                     key_kind::rsa) == "expected an RSA private key (RS256), got EC");
  BOOST_TEST(refusal(rsa, key_kind::ec_p256) ==
             "expected an EC P-256 private key (ES256), got RSA");
  BOOST_TEST(refusal(private_key_pem(shared_rsa_key(), pem_form::traditional), key_kind::ec_p256) ==
             "expected an EC P-256 private key (ES256), got RSA");
  BOOST_TEST(refusal(private_key_pem(generate_ec_key("P-384").get()), key_kind::ec_p256) ==
             "expected an EC P-256 private key (ES256), got curve secp384r1");
  BOOST_TEST(contains(refusal(ed25519, key_kind::rsa), "got ED25519"));
  BOOST_TEST(contains(refusal(ed25519, key_kind::ec_p256), "got ED25519"));
  BOOST_TEST(refusal(private_key_pem(generate_rsa_key(1024).get()), key_kind::rsa) ==
             "the RSA key has 1024 bits, RS256 needs at least 2048");
}

BOOST_AUTO_TEST_CASE(unreadable_or_encrypted_pem_is_refused_without_quoting_it) {
  const auto pem = private_key_pem(shared_rsa_key());
  BOOST_TEST(quotes_pem_body("reason: " + pem, pem)); // the check below can fire
  BOOST_TEST(refusal("", key_kind::rsa) == "the private key is empty");
  BOOST_TEST(refusal(" \r\n\t", key_kind::ec_p256) == "the private key is empty");
  BOOST_TEST(refusal("not a key at all", key_kind::rsa) ==
             "the private key is not PEM text (no -----BEGIN line)");
  // The base64 body without its BEGIN/END lines, as a careless copy would leave it.
  const auto body_start = pem.find('\n') + 1;
  const auto body = pem.substr(body_start, pem.find("-----END") - body_start);
  BOOST_TEST(refusal(body, key_kind::rsa) ==
             "the private key is not PEM text (no -----BEGIN line)");

  const std::string unreadable = "no readable private key in the PEM text";
  // Cut short: the last half of the body is missing.
  BOOST_TEST(refusal(pem.substr(0, pem.size() / 2) + "\n-----END PRIVATE KEY-----\n",
                     key_kind::rsa) == unreadable);
  // One character of the body changed, so the DER inside no longer parses.
  std::string corrupted = pem;
  corrupted[body_start + 2] = corrupted[body_start + 2] == 'A' ? 'B' : 'A';
  BOOST_TEST(refusal(corrupted, key_kind::rsa) == unreadable);
  BOOST_TEST(refusal("-----BEGIN PRIVATE KEY-----\nnot base64 !!\n-----END PRIVATE KEY-----\n",
                     key_kind::rsa) == unreadable);
  // A public key is not a private key.
  BOOST_TEST(refusal(public_key_pem(shared_rsa_key()), key_kind::rsa) == unreadable);

  BOOST_TEST(refusal(private_key_pem(shared_rsa_key(), pem_form::encrypted_pkcs8), key_kind::rsa) ==
             "the private key is encrypted; herald reads only unencrypted keys");
  // Without a place for the reason, a refusal is still a refusal.
  BOOST_TEST(!load_private_key(corrupted, key_kind::rsa, nullptr).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
