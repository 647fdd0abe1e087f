#include "tools/load_generator.hpp"

#include "tools/http_client.hpp"
#include "tools/invariant_checker.hpp"
#include "tools/load_config.hpp"
#include "tools/load_plan.hpp"
#include "tools/load_report.hpp"
#include "tools/load_runner.hpp"

#include <chrono>
#include <iostream>
#include <sstream>

namespace herald::tools {

namespace {

std::string default_prefix() {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  return "load-" + std::to_string(now) + "-";
}

bool reset_provider(const load_options& options) {
  try {
    http_client provider(*options.provider, options.request_timeout);
    return provider.request("POST", "/calls/reset").status == 200;
  } catch (const connection_error& e) {
    std::cerr << "herald load: " << e.what() << "\n";
    return false;
  }
}

} // namespace

int run_load(const std::vector<std::string>& args) {
  load_options options;
  try {
    options = parse_load_args(args);
  } catch (const usage_error& e) {
    std::cerr << "herald load: " << e.what() << "\n";
    return 2;
  }
  if (options.help) {
    std::cout << load_usage();
    return 0;
  }
  if (options.biz_prefix.empty())
    options.biz_prefix = default_prefix();
  if (options.reset_provider && !reset_provider(options)) {
    std::cerr << "herald load: cannot reset the provider at " << options.provider->to_string()
              << "\n";
    return 1;
  }

  auto plan = make_load_plan(options);
  auto run = run_load_test(options, plan, std::cerr);
  auto report = check_invariants(run.record);
  if (options.json)
    std::cout << report_json(options, run, report) << std::endl;
  else
    std::cout << report_text(options, run, report) << std::flush;
  return report.all_pass() ? 0 : 1;
}

} // namespace herald::tools
