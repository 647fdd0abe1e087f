#pragma once

#include "tools/invariant_checker.hpp"
#include "tools/load_config.hpp"
#include "tools/load_runner.hpp"

#include <string>

namespace herald::tools {

/// The whole result as one JSON object (see load_usage / the report's field names):
/// {"target","provider","events","channels","pass","mode":{"loop","rate","batch","concurrency"},
///  "ingest":{…,"latency_ms":{"count","p50","p99","p999","max"},"batch_latency_ms":{same},
///  "accepted_per_s","accepted_tasks_per_s","accepted_window_s","late_starts"},
///  "delivery":{"available","delivered","last_provider_call_s","delivered_per_s",…},
///  "late":{…},"drain":{"complete","rounds","pending_at_end","duration_s","retry_queue_depth"},
///  "settle":{same}|null,"receipts":{"herald":{"receipts_total","receipts_rejected_total",
///  "reconciled_total"},"provider":{"requests","without_receipt","dropped",…}|null},
///  "stats":{"available":true,"from","total":{…},"channels":{…}}|{"available":false,"reason"},
///  "delivered_tasks","delivered_per_s","states":{STATE:n},"counts":{…},
///  "provider_summary":{…}|null,"invariants":[{"name","pass","detail"}]}
std::string report_json(const load_options& options, const load_run& run,
                        const check_report& report);

/// The same for people: a few aligned lines and one PASS/FAIL line per invariant.
std::string report_text(const load_options& options, const load_run& run,
                        const check_report& report);

} // namespace herald::tools
