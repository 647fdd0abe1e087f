// Every curl example of README.md and docs/api.md, run in the order written against the built
// binary on its embedded default configuration (a fresh SQLite database per document), as a
// reader would paste them: an example that stops working — an expired date, a changed route,
// a field renamed — fails here instead of in a new user's terminal. The commands run in bash
// with curl, their dates computed by `date` as the documents write them; the test only points
// `localhost:8080` at its own port and fills `<message_id>`-style placeholders with the field of
// that name from the newest answer that has one. Each must answer 2xx, or the status its
// comment says "this answers". The README's command-line synopsis is `herald --help`'s.

#include "support/eventually.hpp"
#include "support/herald_server.hpp"

#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald::test;
namespace json = boost::json;

namespace {

/// One curl command of a document: where it is, the comment lines right above it, its text.
struct curl_example {
  int line = 0;
  std::string comment;
  std::string command;
};

std::string document(const std::string& relative_path) {
  auto text = read_file(std::string(HERALD_SOURCE_DIR) + "/" + relative_path);
  BOOST_REQUIRE_MESSAGE(!text.empty(), "cannot read " << relative_path);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

/// Whether a command still goes on after `line`: a trailing backslash, or a single-quoted
/// string (a JSON body) left open.
bool continues(const std::string& line, bool& in_quote) {
  for (char c : line)
    if (c == '\'')
      in_quote = !in_quote;
  return in_quote || (!line.empty() && line.back() == '\\');
}

/// The curl commands of the ```sh blocks of a Markdown text, in order.
std::vector<curl_example> curl_examples(const std::string& markdown) {
  std::vector<curl_example> examples;
  const auto lines = lines_of(markdown);
  bool in_shell_block = false;
  std::string comment;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& line = lines[i];
    if (starts_with(line, "```")) {
      in_shell_block = !in_shell_block && line == "```sh";
      comment.clear();
      continue;
    }
    if (!in_shell_block)
      continue;
    if (starts_with(line, "#")) {
      comment += line + "\n";
      continue;
    }
    if (!starts_with(line, "curl ")) {
      comment.clear();
      continue;
    }
    curl_example example{static_cast<int>(i + 1), comment, line};
    bool in_quote = false;
    for (bool more = continues(line, in_quote); more && i + 1 < lines.size();
         more = continues(lines[i], in_quote))
      example.command += "\n" + lines[++i];
    examples.push_back(std::move(example));
    comment.clear();
  }
  return examples;
}

/// Lines of the text that start a curl command, wherever they are: each must be an example
/// the test runs.
std::size_t curl_lines(const std::string& markdown) {
  std::size_t count = 0;
  for (const auto& line : lines_of(markdown))
    count += starts_with(line, "curl ");
  return count;
}

/// The status a comment promises ("... this answers 409"), if it names one.
std::optional<int> promised_status(const std::string& comment) {
  static const std::regex answers{R"(this answers (\d{3})\b)"};
  std::smatch match;
  if (!std::regex_search(comment, match, answers))
    return std::nullopt;
  return std::stoi(match[1]);
}

/// The first string field named `name` in `value`, depth first.
std::optional<std::string> find_field(const json::value& value, const std::string& name) {
  if (const auto* object = value.if_object()) {
    if (const auto* field = object->if_contains(name); field && field->is_string())
      return std::string(field->as_string());
    for (const auto& [key, member] : *object)
      if (auto found = find_field(member, name))
        return found;
  } else if (const auto* array = value.if_array()) {
    for (const auto& item : *array)
      if (auto found = find_field(item, name))
        return found;
  }
  return std::nullopt;
}

/// The JSON body of curl's output (after the headers with -i), or null when it is none.
json::value answer_body(const std::string& output) {
  auto body = output;
  if (starts_with(body, "HTTP/"))
    if (auto end = body.find("\r\n\r\n"); end != std::string::npos)
      body = body.substr(end + 4);
  boost::system::error_code ec;
  auto parsed = json::parse(body, ec);
  return ec ? json::value(nullptr) : parsed;
}

/// The command with `localhost:8080` pointing at `port` and each `<name>` replaced by the
/// field `name` of the newest answer that has it.
std::string runnable(const curl_example& example, std::uint16_t port,
                     const std::vector<json::value>& answers) {
  BOOST_REQUIRE_MESSAGE(example.command.find("localhost:8080") != std::string::npos,
                        "line " << example.line << " does not call localhost:8080");
  auto command = std::regex_replace(example.command, std::regex("localhost:8080"),
                                    "localhost:" + std::to_string(port));
  static const std::regex placeholder{"<([a-z_]+)>"};
  std::smatch match;
  while (std::regex_search(command, match, placeholder)) {
    std::optional<std::string> value;
    for (auto answer = answers.rbegin(); answer != answers.rend() && !value; ++answer)
      value = find_field(*answer, match[1]);
    BOOST_REQUIRE_MESSAGE(value, "line " << example.line << ": no answer before it has a field '"
                                         << match[1] << "'");
    command = match.prefix().str() + *value + match.suffix().str();
  }
  return command;
}

struct shell_run {
  int exit_code = -1;
  std::string out;
  int http_status = 0; ///< of the (last) curl call
};

/// Runs `command` in bash, curl reporting each answer's status on stderr.
shell_run run_in_shell(const std::string& command, const temp_dir& dir) {
  const auto script = dir.file("example.sh");
  write_file(script, "set -o pipefail\n"
                     "curl() { command curl --max-time 20 "
                     "--write-out '%{stderr}HTTP_STATUS=%{http_code}\\n' \"$@\"; }\n" +
                         command + "\n");
  const auto status =
      std::system(("bash " + script + " >" + dir.file("out") + " 2>" + dir.file("err")).c_str());
  shell_run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(dir.file("out"));
  static const std::regex reported{R"(HTTP_STATUS=(\d{3}))"};
  const auto err = read_file(dir.file("err"));
  for (std::sregex_iterator it(err.begin(), err.end(), reported), end; it != end; ++it)
    run.http_status = std::stoi((*it)[1]);
  return run;
}

/// Whether herald has nothing left to send: what an example reads (an inbox item, a task's
/// state) is then in place, as it is for a reader typing the commands one by one.
bool settled(running_herald& herald) {
  auto response = herald.get("/v1/stats");
  if (response.status != 200)
    return false;
  const auto stats = json::parse(response.body);
  const auto& total = stats.at("total").as_object();
  for (const char* unfinished : {"pending", "sending", "retry_wait"})
    if (total.at(unfinished).to_number<std::uint64_t>() != 0)
      return false;
  return true;
}

/// Runs every curl example of the document, in order, against a fresh herald.
void run_examples_of(const std::string& relative_path) {
  const auto markdown = document(relative_path);
  const auto examples = curl_examples(markdown);
  BOOST_REQUIRE_EQUAL(examples.size(), curl_lines(markdown)); // none left out
  BOOST_REQUIRE(!examples.empty());
  running_herald herald("");
  temp_dir dir("herald-e2e-examples");
  std::vector<json::value> answers;
  for (const auto& example : examples) {
    BOOST_TEST_CONTEXT(relative_path << ":" << example.line << "\n" << example.command) {
      BOOST_REQUIRE(eventually([&] { return settled(herald); }));
      const auto run = run_in_shell(runnable(example, herald.port(), answers), dir);
      BOOST_TEST(run.exit_code == 0, "exit code " << run.exit_code << ", output: " << run.out);
      if (auto status = promised_status(example.comment))
        BOOST_TEST(run.http_status == *status, run.out);
      else
        BOOST_TEST((run.http_status >= 200 && run.http_status < 300),
                   "status " << run.http_status << ": " << run.out);
      answers.push_back(answer_body(run.out));
    }
  }
}

/// The block of the README's "## Command line" section.
std::string readme_synopsis() {
  const auto readme = document("README.md");
  const auto section = readme.find("## Command line\n");
  BOOST_REQUIRE(section != std::string::npos);
  const auto open = readme.find("```\n", section);
  const auto close = readme.find("```\n", open + 4);
  BOOST_REQUIRE(open != std::string::npos && close != std::string::npos);
  return readme.substr(open + 4, close - open - 4);
}

/// The usage lines of `herald --help`, without their indentation.
std::string help_synopsis() {
  const auto help = run_herald({"--help"});
  BOOST_REQUIRE_EQUAL(help.exit_code, 0);
  const auto start = help.out.find("usage:\n");
  const auto end = help.out.find("\n\n", start);
  BOOST_REQUIRE(start != std::string::npos && end != std::string::npos);
  std::string synopsis;
  for (const auto& line : lines_of(help.out.substr(start + 7, end - start - 7)))
    synopsis += line.substr(std::min<std::size_t>(2, line.size())) + "\n";
  return synopsis;
}

} // namespace

BOOST_AUTO_TEST_SUITE(doc_examples_tests)

BOOST_AUTO_TEST_CASE(every_readme_curl_example_runs) {
  run_examples_of("README.md");
}

BOOST_AUTO_TEST_CASE(every_api_curl_example_runs) {
  run_examples_of("docs/api.md");
}

BOOST_AUTO_TEST_CASE(the_readme_synopsis_is_the_binarys) {
  BOOST_TEST(readme_synopsis() == help_synopsis());
}

BOOST_AUTO_TEST_CASE(a_comment_can_promise_another_status) {
  // The parser the examples rely on: a command spans its continuation lines and open quotes,
  // and the comment right above it may name the status it answers.
  const auto examples = curl_examples("```sh\n# the same again answers 200, but this answers 409\n"
                                      "curl -s -X POST localhost:8080/x -d '{\n  \"a\": 1}'\n"
                                      "curl -s localhost:8080/y \\\n  -H 'A: b'\n```\n"
                                      "curl outside a block\n");
  BOOST_REQUIRE_EQUAL(examples.size(), 2u);
  BOOST_TEST(examples[0].command == "curl -s -X POST localhost:8080/x -d '{\n  \"a\": 1}'");
  BOOST_TEST(promised_status(examples[0].comment).value_or(0) == 409);
  BOOST_TEST(examples[1].command == "curl -s localhost:8080/y \\\n  -H 'A: b'");
  BOOST_TEST(!promised_status(examples[1].comment));
}

BOOST_AUTO_TEST_SUITE_END()
