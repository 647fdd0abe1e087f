#!/usr/bin/env python3
"""Checks the Grafana dashboard and the Prometheus rules against the metrics herald exports.

    check_dashboard.py --metrics src/observability/metrics.cpp --dashboard ops/grafana/herald.json
                       --rules ops/prometheus/alerts.yml [--docs docs/operations.md]
                       [--promtool /usr/bin/promtool] [--self-test]

The dashboard must be importable by Grafana (title, uid, schemaVersion, an __inputs datasource,
panels with unique ids, a type, a gridPos inside the 24-column grid and PromQL targets whose
datasource resolves to the input or a datasource variable, variables that exist). Every metric
named by a dashboard query, a template variable or a rule expression must be one herald exports:
the `.Name("...")` declarations of metrics.cpp (a histogram adds _bucket, _sum and _count;
counters are declared with their _total name), the scrape's own `up`, and in the rules file the
series its own recording rules define. Every exported metric must be on some panel, and with
--docs every alert must be named (in backquotes) in the operations guide.

With --promtool every dashboard query (variables substituted) is also parsed by
`promtool check rules`. With --self-test the checker is then run on broken copies (a misspelt
metric in a panel and in a rule, a duplicate panel id, an unknown datasource, an undefined
variable) and must reject each of them, naming the panel or rule.

Python 3 standard library only. Exit status 0 when everything holds, 1 otherwise.
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

# --- herald's metrics -----------------------------------------------------------------------


def exported_metrics(metrics_cpp):
    """{exposition name: family} from prometheus::Build<Type>().Name("...") declarations."""
    text = open(metrics_cpp, encoding="utf-8").read()
    found = re.findall(r'Build(Counter|Gauge|Histogram|Summary)\(\)\s*\.Name\("([^"]+)"\)', text)
    # Every .Name( must have been understood, or a metric would silently go unchecked.
    if len(found) != len(re.findall(r"\.Name\(", text)) or not found:
        raise SystemExit(f"{metrics_cpp}: could not read every .Name(...) declaration")
    names = {}
    for kind, name in found:
        if kind == "Histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                names[name + suffix] = name
        elif kind == "Summary":
            for suffix in ("", "_sum", "_count"):
                names[name + suffix] = name
        else:
            names[name] = name
    return names


# The scrape's own series, recorded by Prometheus for every target.
SCRAPE_SERIES = {"up"}

# --- PromQL ---------------------------------------------------------------------------------

FUNCTIONS = set("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp
clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month
deg delta deriv exp floor histogram_count histogram_fraction histogram_quantile histogram_sum
holt_winters hour idelta increase irate label_join label_replace last_over_time ln log10 log2
max_over_time min_over_time minute month pi predict_linear present_over_time quantile_over_time
rad rate resets round scalar sgn sin sinh sort sort_desc sqrt stddev_over_time stdvar_over_time
sum_over_time tan tanh time timestamp vector year
""".split())
AGGREGATIONS = set("sum min max avg group stddev stdvar count count_values bottomk topk quantile".split())
KEYWORDS = set("and or unless by without on ignoring group_left group_right offset bool".split())

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
GRAFANA_VAR = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]")
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                    "__range_ms", "__from", "__to", "__dashboard", "__user", "__org", "__name",
                    "timeFilter", "__timeFilter"}


def promql_names(expr):
    """(metric names, unknown function names, problems) found in a PromQL expression."""
    problems = []
    metrics = set()
    for op, value in re.findall(r'__name__\s*(=~|!~|!=|=)\s*"([^"]*)"', expr):
        if op == "=":
            metrics.add(value)
        else:
            problems.append(f"__name__{op}\"{value}\" cannot be checked")
    text = re.sub(r"#[^\n]*", " ", STRING.sub('""', expr))   # comments, then strings
    text = re.sub(r"\{[^{}]*\}", "{}", text)                 # label matchers
    text = re.sub(r"\[[^\]]*\]", "[]", text)                 # ranges and subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", r"\1", text)
    text = GRAFANA_VAR.sub("1", text)
    functions = set()
    for match in re.finditer(r"(?<![\w.:$])([A-Za-z_:][\w:]*)", text):
        word = match.group(1)
        after = text[match.end():].lstrip()
        if word in KEYWORDS or word.lower() in ("inf", "nan"):
            continue
        if word in AGGREGATIONS and (after.startswith("(") or re.match(r"(by|without)\b", after)):
            continue
        if after.startswith("("):
            if word not in FUNCTIONS:
                functions.add(word)
            continue
        metrics.add(word)
    return metrics, functions, problems


def grafana_vars(expr):
    return {a or b or c for a, b, c in GRAFANA_VAR.findall(expr)}


def check_expr(expr, allowed, where, errors):
    metrics, functions, problems = promql_names(expr)
    for name in sorted(metrics - allowed):
        errors.append(f"{where}: unknown metric '{name}' (not exported by herald)")
    for name in sorted(functions):
        errors.append(f"{where}: unknown PromQL function '{name}'")
    for problem in problems:
        errors.append(f"{where}: {problem}")
    return metrics


# --- the dashboard --------------------------------------------------------------------------

PANEL_TYPES_WITHOUT_QUERIES = {"row", "text", "news", "dashlist", "alertlist"}


def all_panels(dashboard):
    for panel in dashboard.get("panels", []):
        yield panel
        for inner in panel.get("panels", []) or []:  # a collapsed row keeps its panels here
            yield inner


def check_dashboard(dashboard, exported, errors):
    """Appends a message to errors for everything Grafana would refuse or show broken."""
    allowed = set(exported) | SCRAPE_SERIES
    used = set()

    if not isinstance(dashboard.get("title"), str) or not dashboard["title"].strip():
        errors.append("dashboard: no title")
    uid = dashboard.get("uid")
    if not isinstance(uid, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", uid):
        errors.append(f"dashboard: uid {uid!r} is not 1-40 letters, digits, '-' or '_'")
    if dashboard.get("id") is not None:
        errors.append("dashboard: id must be null in a dashboard meant for import")
    version = dashboard.get("schemaVersion")
    # Grafana 10 and 11 export 36-41 and migrate anything older on import.
    if not isinstance(version, int) or not 36 <= version <= 41:
        errors.append(f"dashboard: schemaVersion {version!r} is not one of Grafana 10/11 (36-41)")

    inputs = {}
    for entry in dashboard.get("__inputs", []):
        if entry.get("type") != "datasource" or not entry.get("name") or not entry.get("pluginId"):
            errors.append(f"__inputs: {entry!r} is not a datasource input with a name and pluginId")
            continue
        inputs[entry["name"]] = entry["pluginId"]
    if "prometheus" not in inputs.values():
        errors.append("__inputs: no Prometheus datasource input (DS_PROMETHEUS)")
    required = {(r.get("type"), r.get("id")) for r in dashboard.get("__requires", [])}
    if ("datasource", "prometheus") not in required:
        errors.append("__requires: the prometheus datasource is not listed")

    variables = {}
    for var in dashboard.get("templating", {}).get("list", []):
        name = var.get("name")
        if not name or name in variables:
            errors.append(f"templating: variable name {name!r} missing or repeated")
            continue
        variables[name] = var
    datasource_vars = {n: v.get("query") for n, v in variables.items() if v.get("type") == "datasource"}

    def resolve(ref, where, want="prometheus"):
        """A datasource reference must name the input or a datasource variable."""
        if ref is None:
            errors.append(f"{where}: no datasource")
            return
        if isinstance(ref, str):
            ref = {"uid": ref}
        uid = ref.get("uid", "")
        if ref.get("type") == "grafana" and uid == "-- Grafana --":
            return
        match = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", uid or "")
        if not match:
            errors.append(f"{where}: datasource uid {uid!r} is neither ${{input}} nor a variable")
            return
        name = match.group(1) or match.group(2)
        plugin = inputs.get(name) or datasource_vars.get(name)
        if plugin is None:
            errors.append(f"{where}: datasource '{name}' is no __inputs entry or datasource variable")
        elif want and plugin != want:
            errors.append(f"{where}: datasource '{name}' is {plugin}, not {want}")
        elif ref.get("type") not in (None, plugin):
            errors.append(f"{where}: datasource type {ref.get('type')!r} but '{name}' is {plugin}")

    def check_vars(expr, where):
        for name in sorted(grafana_vars(expr) - set(variables) - GRAFANA_BUILTINS):
            errors.append(f"{where}: variable ${name} is not defined in templating")

    for name, var in variables.items():
        if var.get("type") != "query":
            continue
        where = f"variable ${name}"
        resolve(var.get("datasource"), where)
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        if not isinstance(query, str) or not query.strip():
            errors.append(f"{where}: no query")
            continue
        check_vars(query, where)
        match = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", query, re.S)
        inner = match.group(1) if match else None
        if inner is None:
            match = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.S)
            inner = match.group(1) if match else None
        if inner is None:
            errors.append(f"{where}: query {query!r} is not label_values(metric, label) or query_result(...)")
            continue
        used |= check_expr(inner, allowed, where, errors)

    seen_ids = {}
    for panel in all_panels(dashboard):
        pid = panel.get("id")
        title = panel.get("title", "")
        where = f"panel {pid} '{title}'"
        if not isinstance(pid, int) or isinstance(pid, bool):
            errors.append(f"{where}: id is not an integer")
        elif pid in seen_ids:
            errors.append(f"{where}: id {pid} repeated (also '{seen_ids[pid]}')")
        else:
            seen_ids[pid] = title
        ptype = panel.get("type")
        if not isinstance(ptype, str) or not ptype:
            errors.append(f"{where}: no type")
        elif ptype != "row" and ("panel", ptype) not in required:
            errors.append(f"{where}: panel type '{ptype}' is not in __requires")
        grid = panel.get("gridPos")
        if not isinstance(grid, dict) or not all(isinstance(grid.get(k), int) for k in "hwxy"):
            errors.append(f"{where}: gridPos needs integer h, w, x, y")
        elif grid["w"] < 1 or grid["h"] < 1 or grid["x"] < 0 or grid["y"] < 0 or grid["x"] + grid["w"] > 24:
            errors.append(f"{where}: gridPos {grid} is outside the 24-column grid")
        if ptype in PANEL_TYPES_WITHOUT_QUERIES:
            continue
        if not title.strip():
            errors.append(f"{where}: no title")
        resolve(panel.get("datasource"), where)
        targets = panel.get("targets")
        if not isinstance(targets, list) or not targets:
            errors.append(f"{where}: no targets")
            continue
        ref_ids = set()
        for target in targets:
            ref = target.get("refId")
            twhere = f"{where} target {ref}"
            if not ref or ref in ref_ids:
                errors.append(f"{twhere}: refId missing or repeated")
            ref_ids.add(ref)
            if "datasource" in target:
                resolve(target["datasource"], twhere)
            expr = target.get("expr")
            if not isinstance(expr, str) or not expr.strip():
                errors.append(f"{twhere}: no PromQL expr")
                continue
            check_vars(expr, twhere)
            used |= check_expr(expr, allowed, twhere, errors)

    # Panels of the top level must not overlap (Grafana would push them around on import).
    boxes = [(p.get("id"), p["gridPos"]) for p in dashboard.get("panels", [])
             if isinstance(p.get("gridPos"), dict) and all(isinstance(p["gridPos"].get(k), int) for k in "hwxy")]
    for i, (a_id, a) in enumerate(boxes):
        for b_id, b in boxes[i + 1:]:
            if (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
                    and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]):
                errors.append(f"panels {a_id} and {b_id}: gridPos overlap")

    families = {exported[name] for name in used if name in exported}
    for family in sorted(set(exported.values()) - families):
        errors.append(f"dashboard: herald exports {family} but no panel shows it")
    return used


def promtool_parse(dashboard, promtool, errors):
    """Has promtool parse every dashboard query, Grafana variables replaced by plausible values."""
    def substitute(expr):
        expr = re.sub(r"\$\{?__rate_interval\}?|\$\{?__interval\}?", "5m", expr)
        expr = re.sub(r"\$\{?__range\}?", "1h", expr)
        return GRAFANA_VAR.sub(".*", expr)   # the others only stand in regex matchers

    rules, names = [], {}
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []) or []:
            if isinstance(target.get("expr"), str):
                record = f"dashboard:panel_{panel.get('id')}_{target.get('refId')}"
                names[record] = f"panel {panel.get('id')} '{panel.get('title', '')}' target {target.get('refId')}"
                rules.append({"record": record, "expr": substitute(target["expr"])})
    # JSON is YAML: promtool reads this file as it is.
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, handle)
        path = handle.name
    try:
        result = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        for record, where in names.items():  # name the panel instead of the generated record
            output = output.replace(record, where)
        errors.append(f"promtool cannot parse a dashboard query:\n{output}")
    return len(rules)


# --- the rules file -------------------------------------------------------------------------


def parse_rules(text):
    """The rules of a Prometheus rules file: [{kind, name, line, expr, keys}].

    The standard library has no YAML parser; this reads the subset rules files use: `- alert:` /
    `- record:` items whose `expr:` is a plain one-line value or a `|` / `>` block. Anything it
    cannot read is reported rather than skipped.
    """
    lines = text.splitlines()
    rules, problems = [], []
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.split(" #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        start = re.match(r"(\s*)-\s+(alert|record):\s*(\S.*)$", stripped)
        if start:
            current = {"kind": start.group(2), "name": start.group(3).strip("'\""), "line": i + 1,
                       "expr": None, "keys": set(), "indent": len(start.group(1))}
            rules.append(current)
            i += 1
            continue
        key = re.match(r"(\s*)([A-Za-z_]\w*):\s*(.*)$", stripped)
        if current and key:
            indent, name, value = len(key.group(1)), key.group(2), key.group(3)
            if indent <= current["indent"]:
                current = None       # left the rule (another key of the group)
            else:
                current["keys"].add(name)
                if name == "expr":
                    if re.fullmatch(r"[|>][-+]?", value):
                        block = []
                        j = i + 1
                        while j < len(lines) and (not lines[j].strip() or
                                                  len(lines[j]) - len(lines[j].lstrip()) > indent):
                            block.append(lines[j].strip())
                            j += 1
                        current["expr"] = "\n".join(block).strip()
                        i = j
                        continue
                    if value[:1] in "'\"":
                        problems.append(f"line {i + 1}: quoted expr is not read by this checker; "
                                        "use a plain value or a | block")
                    current["expr"] = value
        i += 1
    expr_lines = len(re.findall(r"^\s*expr:", text, re.M))
    if expr_lines != sum(1 for r in rules if r["expr"]):
        problems.append(f"{expr_lines} expr: lines but {sum(1 for r in rules if r['expr'])} rules read")
    return rules, problems


def check_rules(text, exported, errors):
    rules, problems = parse_rules(text)
    errors.extend(f"rules: {p}" for p in problems)
    if not rules:
        errors.append("rules: no rule found")
    allowed = set(exported) | SCRAPE_SERIES | {r["name"] for r in rules if r["kind"] == "record"}
    alerts = 0
    for rule in rules:
        where = f"rules line {rule['line']} {rule['kind']} {rule['name']}"
        if not rule["expr"]:
            errors.append(f"{where}: no expr")
            continue
        check_expr(rule["expr"], allowed, where, errors)
        if rule["kind"] == "alert":
            alerts += 1
            for key in ("for", "severity", "summary", "description"):
                if key not in rule["keys"]:
                    errors.append(f"{where}: no {key}")
    return len(rules), alerts


# --- main -----------------------------------------------------------------------------------


def run_checks(dashboard, rules_text, exported, promtool=None):
    errors = []
    check_dashboard(dashboard, exported, errors)
    counts = check_rules(rules_text, exported, errors)
    parsed = promtool_parse(dashboard, promtool, errors) if promtool else 0
    return errors, counts, parsed


def self_test(dashboard, rules_text, exported):
    """The checker must reject broken copies, naming what is wrong. Returns failures."""
    failures = []
    queried = [p for p in all_panels(dashboard) if p.get("targets")]
    victim = next(p for p in queried if "herald_provider_calls_total" in p["targets"][0]["expr"])

    def expect(label, dash, rules, *needles):
        errors, _, _ = run_checks(dash, rules, exported)
        text = "\n".join(errors)
        if not errors or not all(n in text for n in needles):
            failures.append(f"self-test '{label}': expected an error naming {needles}, got {errors}")
        else:
            print(f"self-test '{label}': rejected as it should be: {errors[0]}")

    broken = copy.deepcopy(dashboard)
    panel = next(p for p in all_panels(broken) if p.get("id") == victim["id"])
    panel["targets"][0]["expr"] = panel["targets"][0]["expr"].replace(
        "herald_provider_calls_total", "herald_provider_call_total", 1)
    expect("misspelt metric in a panel", broken, rules_text,
           f"'{victim['title']}'", "unknown metric 'herald_provider_call_total'")

    expect("misspelt metric in a rule", dashboard,
           rules_text.replace("herald_dead_letters_total", "herald_dead_letter_total", 1),
           "unknown metric 'herald_dead_letter_total'", "record channel:herald_dead_letters:increase15m")

    broken = copy.deepcopy(dashboard)
    panels = [p for p in all_panels(broken) if p.get("type") != "row"]
    panels[1]["id"] = panels[0]["id"]
    expect("duplicate panel id", broken, rules_text, f"id {panels[0]['id']} repeated")

    broken = copy.deepcopy(dashboard)
    panel = next(p for p in all_panels(broken) if p.get("id") == victim["id"])
    panel["datasource"] = {"type": "prometheus", "uid": "${DS_PROM}"}
    expect("unknown datasource", broken, rules_text, f"'{victim['title']}'", "datasource 'DS_PROM'")

    broken = copy.deepcopy(dashboard)
    panel = next(p for p in all_panels(broken) if p.get("id") == victim["id"])
    panel["targets"][0]["expr"] = panel["targets"][0]["expr"].replace("$channel", "$chanel", 1)
    expect("undefined variable", broken, rules_text, f"'{victim['title']}'", "$chanel")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", required=True, help="src/observability/metrics.cpp")
    parser.add_argument("--dashboard", required=True, help="ops/grafana/herald.json")
    parser.add_argument("--rules", required=True, help="ops/prometheus/alerts.yml")
    parser.add_argument("--docs", help="docs/operations.md: must name every alert of the rules")
    parser.add_argument("--promtool", help="also have promtool parse every dashboard query")
    parser.add_argument("--self-test", action="store_true", help="also check the checker")
    args = parser.parse_args()

    exported = exported_metrics(args.metrics)
    with open(args.dashboard, encoding="utf-8") as handle:
        try:
            dashboard = json.load(handle)
        except json.JSONDecodeError as error:
            print(f"FAIL {args.dashboard}: not JSON: {error}")
            return 1
    rules_text = open(args.rules, encoding="utf-8").read()

    errors, (rules, alerts), parsed = run_checks(dashboard, rules_text, exported, args.promtool)
    if args.docs:
        docs = open(args.docs, encoding="utf-8").read()
        for rule in parse_rules(rules_text)[0]:
            if rule["kind"] == "alert" and f"`{rule['name']}`" not in docs:
                errors.append(f"{args.docs}: alert {rule['name']} is not described")
    if errors:
        for error in errors:
            print(f"FAIL {error}")
        return 1
    panels = sum(1 for p in all_panels(dashboard) if p.get("targets"))
    families = len(set(exported.values()))
    print(f"OK {args.dashboard}: {panels} panels with queries, every one of herald's {families} "
          f"metric families shown" + (f", {parsed} queries parsed by promtool" if parsed else ""))
    print(f"OK {args.rules}: {rules} rules ({alerts} alerts) name only exported metrics")

    if args.self_test:
        failures = self_test(dashboard, rules_text, exported)
        for failure in failures:
            print(f"FAIL {failure}")
        if failures:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
