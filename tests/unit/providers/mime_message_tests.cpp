#include "providers/mime_message.hpp"
#include "support/herald_process.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::providers;
namespace json = boost::json;

namespace {

// Reads a message back with Python's standard email package (the modern policy, as a mail
// program would) and prints what it found as JSON. Each subject encoded word is also decoded on
// its own, strictly: a word that splits a UTF-8 character makes the script fail. The modern
// policy puts a space between adjacent encoded words of a display name, where RFC 2047 §6.2 (and
// mail clients) ignore the white space between them, so a display name of several encoded words
// is read with email.header's decoder instead, which follows the RFC.
constexpr const char* python_reader = R"(
import base64, email, email.header, email.policy, json, re, sys

with open(sys.argv[1], 'rb') as f:
    message = email.message_from_bytes(f.read(), policy=email.policy.default)
defects = [type(d).__name__ for part in message.walk() for d in part.defects]
for name, value in message.items():
    defects += [name + ': ' + type(d).__name__ for d in value.defects]
raw_headers = dict(message.raw_items())
raw_subject = raw_headers['Subject']
raw_phrase = raw_headers['From'][:raw_headers['From'].rfind('<')].strip()
several_words = re.fullmatch(r'(=\?UTF-8\?B\?[A-Za-z0-9+/=]*\?=\s*){2,}', raw_phrase) is not None
words = re.findall(r'=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=', raw_subject)
sender = message['From'].addresses
recipient = message['To'].addresses

def body(subtype):
    part = message.get_body(preferencelist=(subtype,))
    return None if part is None else part.get_content()

print(json.dumps({
    'subject': str(message['Subject']),
    'subject_words': [base64.b64decode(w).decode('utf-8', 'strict') for w in words],
    'from_name': (str(email.header.make_header(email.header.decode_header(raw_phrase)))
                  if several_words else sender[0].display_name),
    'from_address': sender[0].addr_spec,
    'from_count': len(sender),
    'to': recipient[0].addr_spec,
    'to_count': len(recipient),
    'message_id': str(message['Message-ID']),
    'date': message['Date'].datetime.isoformat(),
    'content_type': message.get_content_type(),
    'parts': [part.get_content_type() for part in message.walk()],
    'text': body('plain'),
    'html': body('html'),
    'defects': defects,
}))
)";

json::object read_back(const std::string& message) {
  herald::test::temp_dir dir("herald-mime");
  herald::test::write_file(dir.file("reader.py"), python_reader);
  herald::test::write_file(dir.file("message.eml"), message);
  const std::string command =
      "python3 '" + dir.file("reader.py") + "' '" + dir.file("message.eml") + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  BOOST_REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.append(buffer, got);
  const int status = ::pclose(pipe);
  BOOST_REQUIRE_MESSAGE(status == 0, "python3 could not read the message back:\n" << message);
  const auto found = json::parse(out).as_object();
  BOOST_TEST(found.at("defects").as_array().empty(), "defects: " << found.at("defects"));
  return found;
}

/// A string the reader found.
std::string field(const json::object& found, const char* name) {
  return json::value_to<std::string>(found.at(name));
}

std::vector<std::string> lines_of(const std::string& message) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < message.size();) {
    const auto end = message.find("\r\n", start);
    lines.push_back(message.substr(start, end - start));
    start = end == std::string::npos ? message.size() : end + 2;
  }
  return lines;
}

/// Checks what must hold for every message: CRLF line endings only, 7-bit, no line past 78
/// characters, none starting with '.' (so SMTP's dot-stuffing leaves it alone).
void check_shape(const std::string& message) {
  BOOST_TEST(message.size() >= 2);
  BOOST_TEST(message.substr(message.size() - 2) == "\r\n");
  for (std::size_t i = 0; i < message.size(); ++i) {
    const auto byte = static_cast<unsigned char>(message[i]);
    BOOST_TEST_REQUIRE(byte < 0x80, "8-bit byte at " << i);
    if (byte == '\r')
      BOOST_TEST_REQUIRE((i + 1 < message.size() && message[i + 1] == '\n'), "lone CR at " << i);
    if (byte == '\n')
      BOOST_TEST_REQUIRE((i > 0 && message[i - 1] == '\r'), "lone LF at " << i);
  }
  for (const auto& line : lines_of(message)) {
    BOOST_TEST(line.size() <= 78u, "line of " << line.size() << ": " << line);
    BOOST_TEST(line.rfind('.', 0) != 0, "line starts with '.': " << line);
  }
}

std::string build(const email_message& message) {
  std::string problem;
  const auto built = build_mime_message(message, &problem);
  BOOST_REQUIRE_MESSAGE(built.has_value(), "refused: " << problem);
  check_shape(*built);
  return *built;
}

/// Why `message` is refused; fails the test when it is built.
std::string refusal(const email_message& message) {
  std::string problem;
  BOOST_TEST(!build_mime_message(message, &problem).has_value());
  BOOST_TEST(problem.find_first_of("\r\n") == std::string::npos);
  return problem;
}

/// The header field `name` as written, folded lines included.
std::string raw_header(const std::string& message, const std::string& name) {
  const std::string text = "\r\n" + message; // the first field has no line before it
  const auto found = text.find("\r\n" + name + ":");
  BOOST_REQUIRE_MESSAGE(found != std::string::npos, "no " << name << " field");
  const auto start = found + 2;
  auto end = start;
  do
    end = text.find("\r\n", end) + 2;
  while (text[end] == ' ');
  return text.substr(start, end - start);
}

email_message sample() {
  email_message message;
  message.from = {"alerts@example.com", "Herald Alerts"};
  message.to = "someone@example.org";
  message.subject = "Your order has shipped";
  message.text_body = "Hello,\nyour order is on its way.\n";
  message.message_id = "hrq_abc";
  message.date_unix = 1709211909; // 2024-02-29 13:05:09 UTC
  return message;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mime_message_tests)

BOOST_AUTO_TEST_CASE(a_text_message_reads_back_as_it_was_given) {
  const auto built = build(sample());
  BOOST_TEST(built.rfind("Date: Thu, 29 Feb 2024 13:05:09 +0000\r\n"
                         "From: Herald Alerts <alerts@example.com>\r\n"
                         "To: someone@example.org\r\n"
                         "Subject: Your order has shipped\r\n"
                         "Message-ID: <hrq_abc@example.com>\r\n"
                         "MIME-Version: 1.0\r\n"
                         "Content-Type: text/plain; charset=UTF-8\r\n"
                         "Content-Transfer-Encoding: base64\r\n\r\n",
                         0) == 0);
  const auto found = read_back(built);
  BOOST_TEST(field(found, "subject") == "Your order has shipped");
  BOOST_TEST(field(found, "from_name") == "Herald Alerts");
  BOOST_TEST(field(found, "from_address") == "alerts@example.com");
  BOOST_TEST(found.at("from_count") == 1);
  BOOST_TEST(field(found, "to") == "someone@example.org");
  BOOST_TEST(found.at("to_count") == 1);
  BOOST_TEST(field(found, "message_id") == "<hrq_abc@example.com>");
  BOOST_TEST(field(found, "date") == "2024-02-29T13:05:09+00:00");
  BOOST_TEST(field(found, "content_type") == "text/plain");
  BOOST_TEST(field(found, "text") == "Hello,\r\nyour order is on its way.\r\n");
  BOOST_TEST(found.at("html").is_null());
}

BOOST_AUTO_TEST_CASE(html_and_text_are_alternatives_text_first) {
  auto message = sample();
  message.html_body = "<p>Hello,<br>your order is <b>on its way</b>.</p>\n<p>Grüße — 谢谢</p>";
  const auto built = build(message);
  const auto found = read_back(built);
  BOOST_TEST(field(found, "content_type") == "multipart/alternative");
  BOOST_TEST(found.at("parts") ==
             (json::array{"multipart/alternative", "text/plain", "text/html"}));
  BOOST_TEST(field(found, "text") == "Hello,\r\nyour order is on its way.\r\n");
  BOOST_TEST(field(found, "html") ==
             "<p>Hello,<br>your order is <b>on its way</b>.</p>\r\n<p>Grüße — 谢谢</p>");
  BOOST_TEST(field(found, "subject") == "Your order has shipped");
  std::size_t delimiters = 0;
  for (const auto& line : lines_of(built))
    delimiters += line.rfind("--herald-alternative-part", 0) == 0;
  BOOST_TEST(delimiters == 3u); // before each part, and the closing one
}

BOOST_AUTO_TEST_CASE(content_that_looks_like_the_boundary_or_smtp_syntax_survives) {
  auto message = sample();
  message.text_body = "--herald-alternative-part\n.\n..leading dots\nFrom the start\n--herald-"
                      "alternative-part--\n";
  message.html_body = "--herald-alternative-part--";
  const auto found = read_back(build(message));
  BOOST_TEST(field(found, "text") == "--herald-alternative-part\r\n.\r\n..leading dots\r\nFrom the "
                                     "start\r\n--herald-alternative-part--\r\n");
  BOOST_TEST(field(found, "html") == "--herald-alternative-part--");
}

BOOST_AUTO_TEST_CASE(empty_bodies_read_back_empty) {
  auto message = sample();
  message.text_body = "";
  BOOST_TEST(field(read_back(build(message)), "text") == "");
  message.html_body = "";
  const auto found = read_back(build(message));
  BOOST_TEST(field(found, "text") == "");
  BOOST_TEST(field(found, "html") == "");
}

BOOST_AUTO_TEST_CASE(every_line_break_in_a_body_is_sent_as_crlf) {
  auto message = sample();
  message.text_body = "lf\nlone cr\rcrlf\r\n\nend";
  BOOST_TEST(field(read_back(build(message)), "text") == "lf\r\nlone cr\r\ncrlf\r\n\r\nend");
}

BOOST_AUTO_TEST_CASE(long_bodies_are_base64_in_76_character_lines) {
  auto message = sample();
  message.text_body = "";
  for (int i = 0; i < 200; ++i)
    message.text_body += "Zeile " + std::to_string(i) + ": Grüße aus Köln, 你好！\n";
  message.html_body = "<ul>" + message.text_body + "</ul>";
  const auto built = build(message);
  const auto body_start = built.find("\r\n\r\n");
  std::size_t full_lines = 0;
  for (const auto& line : lines_of(built.substr(body_start + 4))) {
    BOOST_TEST(line.size() <= 76u);
    full_lines += line.size() == 76;
  }
  BOOST_TEST(full_lines > 100u);
  const auto found = read_back(built);
  std::string expected;
  for (int i = 0; i < 200; ++i)
    expected += "Zeile " + std::to_string(i) + ": Grüße aus Köln, 你好！\r\n";
  BOOST_TEST(field(found, "text") == expected);
  BOOST_TEST(field(found, "html") == "<ul>" + expected + "</ul>");
}

BOOST_AUTO_TEST_CASE(a_chinese_subject_is_encoded_in_whole_characters) {
  auto message = sample();
  message.subject =
      "您好，这是来自 Herald 的测试通知：您的订单已发货，请注意查收。如有疑问请回复。";
  const auto built = build(message);
  const auto header = raw_header(built, "Subject");
  BOOST_TEST(header.find("=?UTF-8?B?") != std::string::npos);
  const auto found = read_back(built);
  BOOST_TEST(field(found, "subject") == message.subject);
  // Several words, each of whole characters (the reader decodes each one strictly), which
  // together are the subject.
  const auto& words = found.at("subject_words").as_array();
  BOOST_TEST(words.size() > 1u);
  std::string joined;
  for (const auto& word : words)
    joined += json::value_to<std::string>(word);
  BOOST_TEST(joined == message.subject);
}

BOOST_AUTO_TEST_CASE(long_subjects_fold_within_78_characters) {
  const std::string ascii = "Reminder: the quarterly maintenance window for the notification "
                            "platform starts on Saturday at 02:00 UTC and lasts about four "
                            "hours; deliveries queued meanwhile are sent afterwards, in order.";
  const std::string mixed = "Érinnerung — " + ascii + " — 提醒：维护窗口 ✓";
  const std::string one_long_word(150, 'x');
  for (const auto& subject : {ascii, mixed, one_long_word}) {
    auto message = sample();
    message.subject = subject;
    const auto built = build(message);
    const auto header = raw_header(built, "Subject");
    BOOST_TEST(lines_of(header).size() > 1u, "not folded: " << header);
    std::size_t start = 0;
    while ((start = header.find("=?", start)) != std::string::npos) {
      const auto end = header.find("?=", start + 10) + 2;
      BOOST_TEST(end - start <= 75u);
      start = end;
    }
    BOOST_TEST(field(read_back(built), "subject") == subject);
  }
  // Plain ASCII words stay readable: folded at spaces, not encoded.
  auto message = sample();
  message.subject = ascii;
  BOOST_TEST(raw_header(build(message), "Subject").find("=?") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(subjects_that_could_be_misread_are_encoded) {
  for (const std::string subject : {"=?UTF-8?B?SGk=?=", " leading space", "trailing space ",
                                    "two  spaces", "tab\there", "", "ascii only", "Zoë"}) {
    auto message = sample();
    message.subject = subject;
    const auto built = build(message);
    const bool plain = subject == "ascii only" || subject.empty();
    BOOST_TEST((raw_header(built, "Subject").find("=?UTF-8?B?") == std::string::npos) == plain,
               "for '" << subject << "'");
    BOOST_TEST(field(read_back(built), "subject") == subject);
  }
}

BOOST_AUTO_TEST_CASE(display_names_read_back_exactly) {
  for (const std::string name :
       {"Herald", "Herald Alerts", "Smith, John", "He said \"hi\"", "back\\slash", "J. R. Smith",
        "Zoë Café", "张伟", "=?UTF-8?B?SGk=?=", "<alerts@evil.example>", "a@b", "Ops (on call)",
        "A rather long display name for the herald notification service's alert sender",
        "Ein sehr langer Absendername für die Benachrichtigungen — mit Umlauten: äöü ÄÖÜ ß"}) {
    auto message = sample();
    message.from.display_name = name;
    const auto built = build(message);
    const auto found = read_back(built);
    BOOST_TEST(field(found, "from_name") == name);
    BOOST_TEST(field(found, "from_address") == "alerts@example.com", "for " << name);
    BOOST_TEST(found.at("from_count") == 1, "for " << name);
  }
  // The long non-ASCII name above needs several encoded words, the case the reader decodes
  // by the RFC.
  auto message = sample();
  message.from.display_name =
      "Ein sehr langer Absendername für die Benachrichtigungen — mit Umlauten: äöü ÄÖÜ ß";
  const auto from = raw_header(build(message), "From");
  BOOST_TEST(from.find("=?UTF-8?B?", from.find("=?UTF-8?B?") + 1) != std::string::npos);

  message.from.display_name = "";
  const auto built = build(message);
  BOOST_TEST(raw_header(built, "From") == "From: alerts@example.com\r\n");
  BOOST_TEST(field(read_back(built), "from_name") == "");
}

BOOST_AUTO_TEST_CASE(the_message_id_domain_defaults_to_the_senders) {
  auto message = sample();
  message.from.address = "noreply@mail.herald.example";
  message.message_id = "hrq_01HZX3.attempt";
  BOOST_TEST(field(read_back(build(message)), "message_id") ==
             "<hrq_01HZX3.attempt@mail.herald.example>");
  message.message_id_domain = "herald";
  BOOST_TEST(raw_header(build(message), "Message-ID") ==
             "Message-ID: <hrq_01HZX3.attempt@herald>\r\n");
}

BOOST_AUTO_TEST_CASE(dates_are_written_in_utc) {
  const std::vector<std::pair<std::int64_t, std::string>> dates{
      {0, "Thu, 01 Jan 1970 00:00:00 +0000"},
      {-1, "Wed, 31 Dec 1969 23:59:59 +0000"},
      {1709211909, "Thu, 29 Feb 2024 13:05:09 +0000"},
      {4102444799, "Thu, 31 Dec 2099 23:59:59 +0000"},
      {-2208988800, "Mon, 01 Jan 1900 00:00:00 +0000"}};
  for (const auto& [unix_seconds, text] : dates) {
    auto message = sample();
    message.date_unix = unix_seconds;
    BOOST_TEST(raw_header(build(message), "Date") == "Date: " + text + "\r\n");
  }
  for (const std::int64_t out_of_range : {std::int64_t{-2208988801}, std::int64_t{253402300800}}) {
    auto message = sample();
    message.date_unix = out_of_range;
    BOOST_TEST(refusal(message) == "date is out of range (years 1900 to 9999)");
  }
}

BOOST_AUTO_TEST_CASE(line_breaks_in_header_inputs_are_refused) {
  const std::vector<std::pair<std::string, std::string email_message::*>> fields{
      {"to address", &email_message::to},
      {"subject", &email_message::subject},
      {"message id", &email_message::message_id},
      {"message id domain", &email_message::message_id_domain}};
  for (const char* injection : {"\r\nBcc: victim@example.net", "\nBcc: victim@example.net", "\r"}) {
    for (const auto& [name, field] : fields) {
      auto message = sample();
      message.*field += injection;
      BOOST_TEST(refusal(message) == name + " contains a line break (refused: header injection)");
    }
    auto message = sample();
    message.from.address += injection;
    BOOST_TEST(refusal(message) ==
               "from address contains a line break (refused: header injection)");
    message = sample();
    message.from.display_name += injection;
    BOOST_TEST(refusal(message) ==
               "from display name contains a line break (refused: header injection)");
  }
  // Bodies may hold line breaks: they are content, not headers.
  auto message = sample();
  message.text_body = "line\r\nBcc: victim@example.net\r\n";
  message.html_body = "line\nBcc: victim@example.net";
  BOOST_TEST(build(message).find("\r\nBcc:") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_refused_by_name) {
  const std::string overlong = "\xc0\xaf";
  const std::string surrogate = "\xed\xa0\x80";
  const std::string cut_short = "ok \xe4\xbd";
  auto message = sample();
  message.from.display_name = overlong;
  BOOST_TEST(refusal(message) == "from display name is not valid UTF-8");
  message = sample();
  message.subject = "\xff";
  BOOST_TEST(refusal(message) == "subject is not valid UTF-8");
  message = sample();
  message.text_body = surrogate;
  BOOST_TEST(refusal(message) == "text body is not valid UTF-8");
  message = sample();
  message.html_body = cut_short;
  BOOST_TEST(refusal(message) == "html body is not valid UTF-8");
}

BOOST_AUTO_TEST_CASE(addresses_and_ids_that_cannot_be_written_are_refused) {
  auto message = sample();
  message.from.address = "Herald <alerts@example.com>";
  BOOST_TEST(refusal(message) == "from address is not a plausible email address");
  message = sample();
  message.to = "a@example.org, b@example.org";
  BOOST_TEST(refusal(message) == "to address is not a plausible email address");
  for (const char* id : {"", "hrq abc", "hrq<abc>", "hrq@abc", ".hrq", "hrq..abc", "hrq\x01"}) {
    message = sample();
    message.message_id = id;
    BOOST_TEST(refusal(message) == "message id must be a dot-atom to be written in a Message-ID");
  }
  message = sample();
  message.message_id_domain = "[127.0.0.1]";
  BOOST_TEST(refusal(message) == "message id domain must be a dot-atom");
  // Without a place for the reason, a refusal is still a refusal.
  BOOST_TEST(!build_mime_message(message, nullptr).has_value());
}

BOOST_AUTO_TEST_CASE(plausible_addresses) {
  for (const auto& good : std::vector<std::string>{
           "a@b", "user@example.com", "first.last+tag@sub.example.co.uk", "o'brien@example.ie",
           "user@localhost", "x_y-z@xn--bcher-kva.example", std::string(64, 'l') + "@example.com",
           std::string(64, 'l') + "@" + std::string(189, 'd')})
    BOOST_TEST(is_plausible_email_address(good), "refused " << good);
  for (const auto& bad :
       std::vector<std::string>{"",
                                "@",
                                "user",
                                "user@",
                                "@example.com",
                                "two@@example.com",
                                "a@b@c",
                                "us er@example.com",
                                "user@exa mple.com",
                                "<user@example.com>",
                                "user@example.com>",
                                "a,b@example.com",
                                "user@[127.0.0.1]",
                                "\"quoted\"@example.com",
                                ".user@example.com",
                                "user.@example.com",
                                "us..er@example.com",
                                "user@example..com",
                                "user@.example.com",
                                "user@example.com.",
                                "user\t@example.com",
                                "user\x7f@example.com",
                                "用户@example.com",
                                "user@例子.广告",
                                std::string(65, 'l') + "@example.com",
                                std::string(64, 'l') + "@" + std::string(190, 'd')})
    BOOST_TEST(!is_plausible_email_address(bad), "accepted " << bad);
}

BOOST_AUTO_TEST_SUITE_END()
