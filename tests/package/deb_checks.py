#!/usr/bin/env python3
"""Helpers of check_deb.sh (the package.deb test); each subcommand exits non-zero with a reason.

  man-vs-help HELP_TEXT_FILE MAN_ROFF_FILE   herald --help and herald(1) name the same commands
                                             and options
  config-drift EMBEDDED PACKAGED             the packaged config is the embedded one but for the
                                             database (and the comments)
  config-value FILE KEY                      a top-level value of a herald JSON config
  unit-values UNIT KEY                       the values of KEY= in a unit file, one per line
  exec-start UNIT                            ExecStart= split into words, NUL-separated
  port-free HOST PORT                        exits 0 when a listener could bind HOST:PORT (the
                                             probe binds it, with SO_REUSEADDR as servers do),
                                             else 1 and says why
  free-port HOST                             a port the kernel hands out free on HOST
  webhook-config CONFIG CHANNEL URL OUT      CONFIG with CHANNEL made a webhook channel to URL,
                                             written to OUT (mode 0644)
  process-below PID NAME                     the first process named NAME (its comm) among PID's
                                             descendants, if any: the test's own herald
  task-status MESSAGE_JSON CHANNEL           the status of CHANNEL's task in a GET
                                             /v1/messages/{id} answer
  notify-listen SOCKET OUT                   a $NOTIFY_SOCKET: appends every datagram's lines to OUT
  logs FILE                                  every line is a JSON object with ts, level and event;
                                             prints the events
  syscalls TRACE UNIT                        the system calls an strace -f trace made are allowed
                                             by the unit's SystemCallFilter=, its sockets by
                                             RestrictAddressFamilies=, and no mapping was ever
                                             made writable and executable (MemoryDenyWriteExecute=)
"""
import json
import os
import re
import shlex
import socket
import subprocess
import sys


def fail(message):
    sys.exit(f"FAIL: {message}")


# --- herald --help against the man page -------------------------------------------------------


def help_entries(text):
    """Usage entries ("herald serve [--config FILE] ...") and option definitions
    ("--config FILE") of herald --help."""
    usages, options = [], []
    lines = text.splitlines()
    in_usage = False
    for line in lines:
        if line.strip() == "usage:":
            in_usage = True
            continue
        if in_usage:
            if not line.strip():
                in_usage = False
                continue
            stripped = line.strip()
            if stripped.startswith("--"):
                in_usage = False  # the option definitions follow the usage without a blank
            else:
                # An entry may end in a description after three or more spaces.
                usage = re.split(r"\s{3,}(?=[a-z(])", stripped)[0]
                if stripped.startswith("herald "):
                    usages.append(usage)
                elif stripped.startswith("["):
                    usages[-1] += " " + usage
                continue  # a description-only continuation line
        m = re.match(r"^  (--[a-z][a-z-]*)(?: (\S+))?\s{2,}\S", line)
        if m:
            options.append(" ".join(filter(None, m.groups())))
    norm = lambda s: re.sub(r"\s+", " ", s).strip()
    return [norm(u) for u in usages], options


def roff_text(line):
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\-", "-").replace('\\"', '"').replace("\\(aq", "'")
    return line


def man_entries(roff):
    usages, options, section, after_tp = [], [], None, False
    for raw in roff.splitlines():
        if raw.startswith(".\\\""):
            continue
        if raw.startswith(".SH"):
            section = raw[3:].strip().strip('"')
            continue
        if raw.startswith(".TP"):
            after_tp = True
            continue
        if section == "SYNOPSIS" and not raw.startswith("."):
            text = re.sub(r"\s+", " ", roff_text(raw)).strip()
            if text:
                usages.append(text)
        elif section == "OPTIONS" and after_tp:
            text = roff_text(re.sub(r"^\.(B|I|BI|BR|IR)\s+", "", raw)).replace('"', "")
            options.append(re.sub(r"\s+", " ", text).strip())
        after_tp = False
    return usages, options


def option_tokens(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))


def man_vs_help(help_file, man_file):
    help_text = open(help_file).read()
    roff = open(man_file).read()
    h_usages, h_options = help_entries(help_text)
    m_usages, m_options = man_entries(roff)
    problems = []
    if not h_usages or not h_options:
        problems.append(f"could not parse herald --help (usages {h_usages}, options {h_options})")
    if h_usages != m_usages:
        problems.append("SYNOPSIS differs from the usage of herald --help:\n  help: "
                        + "\n        ".join(h_usages) + "\n  man:  " + "\n        ".join(m_usages))
    if h_options != m_options:
        problems.append(f"OPTIONS differ: help {h_options}, man {m_options}")
    man_plain = "\n".join(roff_text(l) for l in roff.splitlines() if not l.startswith(".\\\""))
    h_tokens, m_tokens = option_tokens(help_text), option_tokens(man_plain)
    if h_tokens != m_tokens:
        problems.append(f"options only in --help: {sorted(h_tokens - m_tokens)}; "
                        f"only in the man page: {sorted(m_tokens - h_tokens)}")
    if problems:
        fail("herald --help and herald(1) disagree:\n" + "\n".join(problems))
    print(f"{len(h_usages)} usage lines, options {' '.join(sorted(h_tokens))}: the same in both")


# --- configuration files ----------------------------------------------------------------------


def strip_comments(text):
    """herald's JSON allows // comments (and trailing commas, which the configs do not use)."""
    out = []
    for line in text.splitlines():
        in_string, i, cut = False, 0, len(line)
        while i < len(line):
            c = line[i]
            if in_string:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def load_config(path):
    try:
        return json.loads(strip_comments(open(path).read()))
    except ValueError as e:
        fail(f"{path} is not JSON (after removing comments): {e}")


def config_drift(embedded, packaged):
    a, b = load_config(embedded), load_config(packaged)
    if b.get("database") != "sqlite:/var/lib/herald/herald.db":
        fail(f"{packaged}: database is {b.get('database')!r}, not sqlite:/var/lib/herald/herald.db")
    if b.get("listen") != "127.0.0.1:8080":
        fail(f"{packaged}: listen is {b.get('listen')!r}, not 127.0.0.1:8080")
    a.pop("database", None)
    b.pop("database", None)
    if a != b:
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        fail(f"{packaged} differs from {embedded} in {keys}, not only in the database: "
             "bring the packaged configuration up to date")
    print(f"{packaged} = {embedded} but for the database")


# --- the unit ---------------------------------------------------------------------------------


def unit_values(unit, key):
    values = []
    for line in open(unit):
        line = line.strip()
        if line.startswith(key + "="):
            values.append(line[len(key) + 1:])
    return values


def exec_start(unit):
    lines = unit_values(unit, "ExecStart")
    if len(lines) != 1:
        fail(f"{unit}: {len(lines)} ExecStart= lines, expected one")
    line = lines[0]
    if line[:1] in "-@:+!":
        fail(f"{unit}: ExecStart= has a prefix this test does not emulate: {line}")
    if "$" in line or "%" in line:
        fail(f"{unit}: ExecStart= uses variables or specifiers this test does not expand: {line}")
    words = shlex.split(line)
    if not words or not words[0].startswith("/"):
        fail(f"{unit}: ExecStart= must start with an absolute path: {line}")
    sys.stdout.write("\0".join(words) + "\0")


# --- ports -------------------------------------------------------------------------------------


def port_free(host, port):
    """The test's own check that herald can listen on HOST:PORT, without ss (iproute2)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port)))
        sock.listen(1)
    except OSError as e:
        print(f"{host}:{port}: {e.strerror}")
        sys.exit(1)
    finally:
        sock.close()


def process_below(pid, name):
    """Finds a process this test started (a descendant of its launcher), so the test never
    signals a herald it did not start (one run by systemd, another test's)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        children.setdefault(fields[1], []).append((entry, comm))
    todo = [str(pid)]
    while todo:
        for child, comm in children.get(todo.pop(0), []):
            if comm == name:
                print(child)
                return
            todo.append(child)


def free_port(host):
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, 0))
    print(sock.getsockname()[1])
    sock.close()


# --- the traced run with a webhook channel ------------------------------------------------------


def webhook_config(config, channel, url, out):
    cfg = load_config(config)
    for i, ch in enumerate(cfg.get("channels", [])):
        if ch.get("name") == channel:
            # The keys every channel type takes stay; the simulated-only ones would be refused.
            kept = {k: v for k, v in ch.items()
                    if k not in ("type", "latency_ms", "retryable_failure_rate",
                                 "permanent_failure_rate", "seed")}
            cfg["channels"][i] = dict(kept, type="webhook", url=url,
                                      secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                      timeout_ms=2000)
            break
    else:
        fail(f"{config} has no channel {channel}")
    with open(out, "w") as f:
        json.dump(cfg, f, indent=2)
    os.chmod(out, 0o644)  # herald runs as its own user


def task_status(answer, channel):
    try:
        message = json.loads(open(answer).read())
    except ValueError:
        print("")
        return
    print(next((t.get("status", "") for t in message.get("tasks", [])
                if t.get("channel") == channel), ""))


# --- sd_notify --------------------------------------------------------------------------------


def notify_listen(path, out):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    os.chmod(path, 0o666)  # herald runs as its own user
    with open(out, "a", buffering=1) as f:
        f.write("# listening\n")
        while True:
            data = sock.recv(65536)
            for line in data.decode("utf-8", "replace").splitlines():
                f.write(line + "\n")


# --- logs -------------------------------------------------------------------------------------


def logs(path):
    events = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        try:
            obj = json.loads(line)
        except ValueError:
            fail(f"{path}:{n} is not a JSON line: {line.rstrip()[:200]}")
        if not isinstance(obj, dict) or not {"ts", "level", "event"} <= obj.keys():
            fail(f"{path}:{n} lacks ts, level or event: {line.rstrip()[:200]}")
        events.append(obj["event"])
    if not events:
        fail(f"{path}: no log lines")
    print(" ".join(events))


# --- system calls -----------------------------------------------------------------------------


def syscall_groups():
    text = subprocess.run(["systemd-analyze", "syscall-filter"], check=True,
                          capture_output=True, text=True).stdout
    groups, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^(@[\w-]+)\s*$", line)
        if m:
            current = groups.setdefault(m.group(1), [])
            continue
        word = line.strip()
        if current is not None and word and not word.startswith("#"):
            current.append(word.split()[0])
    return groups


def expand(groups, names):
    out = set()
    for name in names:
        if name.startswith("@"):
            if name not in groups:
                fail(f"systemd-analyze does not know the group {name}")
            out |= expand(groups, groups[name])
        else:
            out.add(name)
    return out


def syscalls(trace, unit):
    groups = syscall_groups()
    allowed, denied = set(), set()
    filters = unit_values(unit, "SystemCallFilter")
    for value in filters:
        names = value.split()
        if not names:  # an empty assignment resets the filter
            allowed, denied = set(), set()
        elif names[0].startswith("~"):
            denied |= expand(groups, [names[0][1:]] + names[1:])
        else:
            allowed |= expand(groups, names)
    if not allowed:
        fail(f"{unit}: no allow-list in SystemCallFilter=")
    # systemd.exec(5): always allowed with an allow-list.
    allowed |= {"execve", "exit", "exit_group", "getrlimit", "rt_sigreturn", "sigreturn",
                "clock_gettime", "clock_gettime64", "gettimeofday", "time", "clock_getres",
                "clock_getres_time64", "nanosleep", "clock_nanosleep", "clock_nanosleep_time64"}
    families = set()
    for value in unit_values(unit, "RestrictAddressFamilies"):
        families |= set(value.split())

    used, mdwe, sockets = set(), [], set()
    call = re.compile(r"^(?:\d+\s+)?(?:<\.\.\. )?([a-z_0-9]+)(?:\(| resumed>)")
    for line in open(trace, encoding="utf-8", errors="replace"):
        m = call.match(line)
        if not m:
            continue
        name = m.group(1)
        used.add(name)
        if name in ("mprotect", "pkey_mprotect") and "PROT_EXEC" in line:
            mdwe.append(line.strip())
        if name == "mmap" and "PROT_WRITE" in line and "PROT_EXEC" in line:
            mdwe.append(line.strip())
        if name == "shmat" and "SHM_EXEC" in line:
            mdwe.append(line.strip())
        if name == "socket":
            f = re.match(r"^(?:\d+\s+)?socket\((AF_[A-Z0-9]+)", line)
            if f:
                sockets.add(f.group(1))
    if len(used) < 20:
        fail(f"{trace}: only {len(used)} distinct system calls; is it an strace -f trace?")
    problems = []
    outside = sorted((used - allowed) | (used & denied))
    if outside:
        problems.append(f"system calls outside SystemCallFilter= (they would fail with EPERM "
                        f"under the unit): {outside}")
    if mdwe:
        problems.append("writable+executable memory (MemoryDenyWriteExecute= forbids it):\n  "
                        + "\n  ".join(mdwe[:10]))
    if families and sockets - families:
        problems.append(f"socket families outside RestrictAddressFamilies=: "
                        f"{sorted(sockets - families)}")
    if problems:
        fail("\n".join(problems))
    print(f"{len(used)} distinct system calls, all in SystemCallFilter=; sockets "
          f"{sorted(sockets)}; no writable+executable mapping")


def main(argv):
    commands = {
        "man-vs-help": (man_vs_help, 2), "config-drift": (config_drift, 2),
        "config-value": (lambda f, k: print(load_config(f).get(k, "")), 2),
        "unit-values": (lambda u, k: print("\n".join(unit_values(u, k))), 2),
        "exec-start": (exec_start, 1), "notify-listen": (notify_listen, 2), "logs": (logs, 1),
        "syscalls": (syscalls, 2), "port-free": (port_free, 2), "free-port": (free_port, 1),
        "process-below": (process_below, 2),
        "webhook-config": (webhook_config, 4), "task-status": (task_status, 2),
    }
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        sys.exit(__doc__)
    commands[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
