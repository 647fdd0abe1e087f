#!/usr/bin/env python3
"""Priority lanes under a flood: how long a verification code waits behind marketing.

Posts FLOOD marketing events (priority low, one channel) through POST /v1/messages/batch from
4 connections while a probe posts one verification code (priority high, same channel) every
PROBE_MS; after the drain it reads every probe back and prints, per probe, the wait from its
202 to the start of its provider call (the attempt's started_at), next to the channel's token
interval (1 / rate_per_sec). Wall clocks of this machine on both sides.

Serve herald with bench/priority/herald.json (the embedded channels, quiet hours off): under
the default policy a marketing flood posted at night (22:00-08:00 UTC) would wait for morning.

  bench/priority/flood.py --target 127.0.0.1:8080 [--flood 100000] [--channel sms]
                          [--rate-per-sec 5000] [--probe-ms 200]
"""
import argparse
import datetime
import http.client
import json
import statistics
import sys
import threading
import time


def post(conn, path, body):
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def event(biz_id, channel, category, priority):
    return {"biz_type": "PRIORITY_FLOOD", "biz_id": biz_id, "user_id": "u-" + biz_id[-3:],
            "channels": [channel], "to": {channel: "+8613800000000"},
            "content": {"title": "", "body": category + " " + biz_id},
            "category": category, "priority": priority}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--flood", type=int, default=100000)
    parser.add_argument("--channel", default="sms")
    parser.add_argument("--rate-per-sec", type=float, default=5000)
    parser.add_argument("--probe-ms", type=int, default=200)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    run = str(int(time.time()))
    batches = [[event(f"flood-{run}-{i * 1000 + j}", args.channel, "marketing", "low")
                for j in range(min(1000, args.flood - i * 1000))]
               for i in range((args.flood + 999) // 1000)]
    flooding = threading.Event()
    flooding.set()
    failures = []
    held_by_policy = []

    def flood(worker):
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        for batch in batches[worker::4]:
            status, body = post(conn, "/v1/messages/batch", {"messages": batch})
            if status != 200:
                failures.append(status)
            held = sum(1 for result in body.get("results", []) for task in result.get("tasks", [])
                       if "policy_reason" in task)
            if held:  # deferred by quiet hours (or capped): not a flood the channel sends now
                held_by_policy.append(held)

    probes = []

    def probe():
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        n = 0
        while flooding.is_set():
            status, body = post(conn, "/v1/messages",
                                event(f"code-{run}-{n}", args.channel, "verification", "high"))
            if status == 202:
                probes.append((body["message_id"], time.time()))
            n += 1
            time.sleep(args.probe_ms / 1000)  # the probe's own schedule, not a wait for herald

    workers = [threading.Thread(target=flood, args=(w,)) for w in range(4)]
    prober = threading.Thread(target=probe)
    started = time.time()
    prober.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    flood_s = time.time() - started
    # Keep probing while the lane drains the backlog the batches left behind.
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    deadline = time.time() + 300
    while time.time() < deadline:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        sent = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("herald_provider_calls_total{") and f'channel="{args.channel}"' in line)
        if sent >= args.flood + len(probes):
            break
        time.sleep(0.25)
    flooding.clear()
    prober.join()
    waits = []
    for message_id, accepted in probes:
        for _ in range(100):
            conn.request("GET", "/v1/messages/" + message_id)
            body = json.loads(conn.getresponse().read())
            attempts = body["tasks"][0].get("attempt_log", [])
            if attempts:
                break
            time.sleep(0.1)
        else:
            print(f"probe {message_id} was never sent", file=sys.stderr)
            return 1
        started_at = datetime.datetime.fromisoformat(attempts[0]["started_at"].replace("Z", "+00:00"))
        waits.append((started_at.timestamp() - accepted) * 1000)
    if held_by_policy:
        print(f"{sum(held_by_policy)} flood tasks were held by policy (quiet hours?): serve herald "
              "with --config bench/priority/herald.json", file=sys.stderr)
        return 1
    waits.sort()
    tick_ms = 1000 / args.rate_per_sec
    print(f"flood: {args.flood} marketing tasks on {args.channel} in {flood_s:.1f} s "
          f"({len(failures)} batch requests refused); drained after {time.time() - started:.1f} s")
    print(f"probes: {len(waits)} verification codes, 202 -> provider call start: "
          f"p50 {statistics.median(waits):.1f} ms, p99 {waits[int(len(waits) * 0.99) - 1]:.1f} ms, "
          f"max {waits[-1]:.1f} ms; token interval {tick_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
