#!/usr/bin/env bash
# package.deb: builds the Debian package with cpack and inspects it (control fields, files,
# modes, the unit, the man page against herald --help); then, only where no systemd is running
# (CI, containers), installs it with dpkg -i, runs the unit's ExecStart line as the package's
# user the way systemd would, stops it with SIGTERM, then removes and purges the package.
#
#   check_deb.sh --build-dir BUILD --source-dir SOURCE
#
# The install phase needs root, or passwordless sudo (sudo -n); it fails, never skips, without.
# It refuses to run when herald is installed already. A trap stops what the test started (by
# PID: never a herald it did not start) and purges the package on every exit.
#
# Where systemd IS running (/run/systemd/system exists: a developer's workstation) the install
# phase is skipped with a printed reason and the test passes on the inspection alone: the
# postinst would start herald.service system-wide on 127.0.0.1:8080 with the same database as
# the test's own run, and the test would install and purge a package on the workstation.
#
# The address: the unit's ExecStart line runs exactly as written, so herald listens where the
# packaged config says (127.0.0.1:8080). When that port is taken on the machine, the test adds
# `--listen 127.0.0.1:<free port>` to the line (command-line options override the config) and
# says so; the packaged address itself is checked in the config either way.
#
# Beyond what the unit's sandbox can be checked for without systemd: herald runs under
# `strace -f`, and every system call it makes must be allowed by the unit's SystemCallFilter=,
# its sockets by RestrictAddressFamilies=, and no mapping may be writable and executable
# (MemoryDenyWriteExecute=). Two runs are traced: the packaged configuration (SQLite, simulated
# channels), and the same with one channel made a webhook to a local `herald sim-provider` over
# plain HTTP, on PostgreSQL when HERALD_TEST_POSTGRES_URL is set (scripts/with-postgres.sh; a
# database of its own, dropped at the end), else on the packaged SQLite database. Not traced:
# TLS (HTTPS providers), the other provider types, PostgreSQL when that variable is unset.
set -euo pipefail

build_dir=""
source_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --source-dir) source_dir=$2; shift 2 ;;
    *) echo "usage: $0 --build-dir BUILD --source-dir SOURCE" >&2; exit 2 ;;
  esac
done
[ -n "$build_dir" ] && [ -n "$source_dir" ] || { echo "usage: $0 --build-dir BUILD --source-dir SOURCE" >&2; exit 2; }
build_dir=$(cd "$build_dir" && pwd)
source_dir=$(cd "$source_dir" && pwd)
packaging="$source_dir/packaging"
generated="$build_dir/packaging" # the configured man page and the generated herald.json
checks=(python3 "$source_dir/tests/package/deb_checks.py")
pg_url=${HERALD_TEST_POSTGRES_URL:-}

step() { echo; echo "== $*"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- which phases run ---------------------------------------------------------------------------

install_phase=1
if [ -d /run/systemd/system ]; then
  install_phase=0
  skip_reason="install phase runs only where no systemd is running, as on CI: it installs the package system-wide (systemd is running here: /run/systemd/system exists, and the postinst would start herald.service on 127.0.0.1:8080)"
fi

# --- privileges and preconditions ---------------------------------------------------------------

missing=()
tools=(cpack dpkg dpkg-deb systemd-analyze python3 gzip cmp readelf od)
[ "$install_phase" = 1 ] && tools+=(dpkg-query setpriv strace curl getent runuser userdel groupdel)
[ "$install_phase" = 1 ] && [ -n "$pg_url" ] && tools+=(psql)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] || fail "missing tools: ${missing[*]} (scripts/install-deps.sh installs them)"

as_root=()
user_existed=1
group_existed=1
if [ "$install_phase" = 1 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    fail "package.deb installs a package and creates a system user: run it as root or with passwordless sudo (sudo -n failed)"
  fi
  if dpkg-query -W -f='${Status}' herald 2>/dev/null | grep -q installed; then
    fail "the package herald is installed on this machine already ($(dpkg-query -W -f='${Status} ${Version}' herald)); this test installs and purges its own and will not touch that one"
  fi
  for path in /usr/bin/herald /etc/herald /lib/systemd/system/herald.service /var/lib/herald; do
    [ ! -e "$path" ] || fail "$path exists but no herald package is installed; remove it first (the test purges what it installs)"
  done
  getent passwd herald >/dev/null || user_existed=0
  getent group herald >/dev/null || group_existed=0
fi

# --- cleanup ------------------------------------------------------------------------------------

tmp=$(mktemp -d /tmp/herald-package.XXXXXX)
chmod 0711 "$tmp" # herald's user reaches the notify socket, its config and the trace folder below
installed=0
run_pid=""    # the launcher of a traced herald run (root's shell, or sudo), started by this test
herald_pid="" # herald under it, found among run_pid's descendants
notify_pid=""
sim_pid=""
pg_db=""

# A child that exited is gone once bash reaps it; a zombie counts as gone too.
running() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
# herald, strace's child, below the launcher this test started.
herald_below() { "${checks[@]}" process-below "$1" herald; }

stop_own_herald() {
  [ -n "$run_pid" ] || return 0
  if running "$run_pid"; then
    [ -n "$herald_pid" ] || herald_pid=$(herald_below "$run_pid")
    if [ -n "$herald_pid" ] && running "$herald_pid"; then
      echo "cleanup: stopping herald (pid $herald_pid)" >&2
      "${as_root[@]}" kill -TERM "$herald_pid" 2>/dev/null
      for _ in $(seq 1 100); do running "$herald_pid" || break; sleep 0.1; done
      running "$herald_pid" && "${as_root[@]}" kill -KILL "$herald_pid" 2>/dev/null
    fi
    # strace (and sudo) end with herald; whatever of this test's launcher is left goes now.
    for _ in $(seq 1 50); do running "$run_pid" || break; sleep 0.1; done
    if running "$run_pid"; then
      local below
      below=$("${checks[@]}" process-below "$run_pid" strace)
      [ -n "$below" ] && "${as_root[@]}" kill -KILL "$below" 2>/dev/null
      "${as_root[@]}" kill -KILL "$run_pid" 2>/dev/null
    fi
  fi
  wait "$run_pid" 2>/dev/null
  run_pid=""
  herald_pid=""
}

stop_notify_listener() {
  [ -n "$notify_pid" ] || return 0
  kill "$notify_pid" 2>/dev/null || true
  wait "$notify_pid" 2>/dev/null || true # 143: the TERM just sent
  notify_pid=""
}

cleanup() {
  local rc=$?
  set +e
  stop_own_herald
  stop_notify_listener
  if [ -n "$sim_pid" ]; then
    kill "$sim_pid" 2>/dev/null
    wait "$sim_pid" 2>/dev/null
  fi
  if [ -n "$pg_db" ]; then
    psql "$pg_url" -qc "DROP DATABASE IF EXISTS $pg_db" >/dev/null 2>&1 ||
      echo "cleanup: could not drop the PostgreSQL database $pg_db" >&2
  fi
  if [ "$installed" = 1 ] && dpkg-query -W -f='${Status}' herald 2>/dev/null | grep -qv not-installed; then
    echo "cleanup: purging the herald package" >&2
    "${as_root[@]}" dpkg --purge herald >/dev/null 2>&1 || echo "cleanup: dpkg --purge herald failed" >&2
  fi
  if [ "$user_existed" = 0 ] && getent passwd herald >/dev/null; then
    # The package keeps its user on purge (Debian practice); the test leaves the machine as it
    # found it.
    "${as_root[@]}" userdel herald 2>/dev/null
  fi
  if [ "$group_existed" = 0 ] && getent group herald >/dev/null; then
    "${as_root[@]}" groupdel herald 2>/dev/null
  fi
  "${as_root[@]}" rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# dpkg refuses at once when another dpkg or apt holds its lock: wait for it, bounded.
dpkg_run() {
  local log=$1; shift
  local deadline=$((SECONDS + 180))
  while true; do
    if "${as_root[@]}" dpkg "$@" >"$log" 2>&1; then return 0; fi
    if grep -Eq 'frontend lock|database is locked|lock-frontend' "$log" && [ $SECONDS -lt $deadline ]; then
      sleep 2
      continue
    fi
    cat "$log" >&2
    return 1
  done
}

# --- build --------------------------------------------------------------------------------------

step "building the package with cpack"
version=$("$build_dir/herald" --version | awk '{print $2}')
[ -n "$version" ] || fail "herald --version printed no version"
grep -q "^set(CPACK_PACKAGE_VERSION \"$version\")" "$build_dir/CPackConfig.cmake" ||
  fail "CPackConfig.cmake's version is not herald's $version: $(grep '^set(CPACK_PACKAGE_VERSION ' "$build_dir/CPackConfig.cmake")"
arch=$(dpkg --print-architecture)
started=$SECONDS
(cd "$build_dir" && cpack -G DEB -B "$tmp/out") >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb="$tmp/out/herald_${version}_${arch}.deb"
[ -f "$deb" ] || { cat "$tmp/cpack.log" >&2; fail "cpack wrote no $(basename "$deb"): $(ls "$tmp/out")"; }
debs=$(find "$tmp/out" -maxdepth 1 -name '*.deb' | wc -l)
[ "$debs" -eq 1 ] || fail "cpack wrote $debs packages, expected one: $(ls "$tmp/out")"
ok "$(basename "$deb"), $(stat -c %s "$deb") bytes, in $((SECONDS - started)) s"

# --- inspect ------------------------------------------------------------------------------------

step "dpkg-deb --info"
dpkg-deb --info "$deb"
field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = herald ] || fail "Package is '$(field Package)', not herald"
[ "$(field Version)" = "$version" ] || fail "Version is '$(field Version)', not $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture is '$(field Architecture)', not $arch"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
[ -n "$(field Description)" ] || fail "no Description"
depends=$(field Depends)
[ -n "$depends" ] || fail "Depends is empty"
echo "$depends" | grep -Eq '(^|, )adduser(,|$| )' || fail "Depends lacks adduser: $depends"
# libc6 and libcaf come from dpkg-shlibdeps: their presence shows it ran.
for lib in libc6 libcaf-core0.17 libsoci-core4.0 libjemalloc2; do
  echo "$depends" | grep -Eq "(^|, )$lib( |,|$)" || fail "Depends lacks $lib (did dpkg-shlibdeps run?): $depends"
done
recommends=$(field Recommends)
# HTTPS provider calls need the CAs; libcurl4 only recommends them (cmake/Packaging.cmake).
echo "$recommends" | grep -Eq '(^|, )ca-certificates( |,|$)' || fail "Recommends lacks ca-certificates: '$recommends'"
ok "herald $version $arch, Depends: $depends; Recommends: $recommends"

step "dpkg-deb --contents"
dpkg-deb --contents "$deb" | tee "$tmp/contents.txt"
awk '{print $1, $2, $6}' "$tmp/contents.txt" | sort >"$tmp/contents.actual"
sort >"$tmp/contents.expected" <<'EOF'
drwxr-xr-x root/root ./etc/
drwxr-xr-x root/root ./etc/herald/
-rw-r--r-- root/root ./etc/herald/herald.json
drwxr-xr-x root/root ./lib/
drwxr-xr-x root/root ./lib/systemd/
drwxr-xr-x root/root ./lib/systemd/system/
-rw-r--r-- root/root ./lib/systemd/system/herald.service
drwxr-xr-x root/root ./usr/
drwxr-xr-x root/root ./usr/bin/
-rwxr-xr-x root/root ./usr/bin/herald
drwxr-xr-x root/root ./usr/share/
drwxr-xr-x root/root ./usr/share/doc/
drwxr-xr-x root/root ./usr/share/doc/herald/
-rw-r--r-- root/root ./usr/share/doc/herald/changelog.gz
-rw-r--r-- root/root ./usr/share/doc/herald/copyright
drwxr-xr-x root/root ./usr/share/man/
drwxr-xr-x root/root ./usr/share/man/man1/
-rw-r--r-- root/root ./usr/share/man/man1/herald.1.gz
EOF
diff -u "$tmp/contents.expected" "$tmp/contents.actual" >&2 ||
  fail "the package's files, modes or owners differ from the expected list (- expected, + actual)"
ok "$(grep -c '^-' "$tmp/contents.actual") files at the expected paths with the expected modes"

step "control files"
dpkg-deb -e "$deb" "$tmp/control"
ls -l "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/herald/herald.json ] ||
  fail "conffiles is '$(cat "$tmp/control/conffiles")', not /etc/herald/herald.json"
for script in postinst prerm postrm; do
  [ -f "$tmp/control/$script" ] || fail "no $script in the package"
  [ "$(stat -c %a "$tmp/control/$script")" = 755 ] || fail "$script has mode $(stat -c %a "$tmp/control/$script"), not 755"
  cmp "$tmp/control/$script" "$packaging/$script" || fail "the packaged $script is not packaging/$script"
  sh -n "$tmp/control/$script" || fail "$script: shell syntax error"
done
ok "conffiles lists /etc/herald/herald.json; postinst, prerm, postrm are packaging/'s, mode 0755"

step "the files"
dpkg-deb -x "$deb" "$tmp/root"
root="$tmp/root"
cmp "$root/etc/herald/herald.json" "$generated/herald.json" ||
  fail "/etc/herald/herald.json is not the generated $generated/herald.json"
head -1 "$root/etc/herald/herald.json" | grep -q "^// herald's configuration as the Debian package installs it" ||
  fail "/etc/herald/herald.json lacks the package's header comment: $(head -1 "$root/etc/herald/herald.json")"
cmp "$root/lib/systemd/system/herald.service" "$packaging/herald.service" || fail "the unit is not packaging/herald.service"
cmp "$root/usr/share/doc/herald/copyright" "$packaging/copyright" || fail "copyright is not packaging/copyright"
for gz in usr/share/man/man1/herald.1.gz usr/share/doc/herald/changelog.gz; do
  gzip -t "$root/$gz" || fail "$gz is not valid gzip"
  # gzip -n: bytes 4-7 (the timestamp) are zero, so the package is the same at every build.
  [ "$(od -A n -t x1 -j 4 -N 4 "$root/$gz" | tr -d ' ')" = 00000000 ] || fail "$gz carries a timestamp (use gzip -n)"
done
gzip -dc "$root/usr/share/man/man1/herald.1.gz" | cmp - "$generated/herald.1" ||
  fail "the man page is not $generated/herald.1 (configured from packaging/herald.1.in)"
th=$(gzip -dc "$root/usr/share/man/man1/herald.1.gz" | grep '^\.TH ')
grep -Eq "^\.TH HERALD 1 \"[0-9]{4}-[0-9]{2}-[0-9]{2}\" \"herald $version\" \"User Commands\"\$" <<<"$th" ||
  fail "the man page's .TH has no date or not version $version: $th"
if gzip -dc "$root/usr/share/man/man1/herald.1.gz" | grep -q '@[A-Z_]*@'; then
  fail "the man page has unreplaced @VARIABLES@: $(gzip -dc "$root/usr/share/man/man1/herald.1.gz" | grep -m1 '@[A-Z_]*@')"
fi
head -1 <(gzip -dc "$root/usr/share/doc/herald/changelog.gz") | grep -q "^herald ($version) " ||
  fail "changelog's first entry is not version $version: $(gzip -dc "$root/usr/share/doc/herald/changelog.gz" | head -1)"
if readelf -S "$root/usr/bin/herald" | grep -q '\.debug_info'; then fail "/usr/bin/herald is not stripped"; fi
[ "$("$root/usr/bin/herald" --version)" = "herald $version" ] || fail "the packaged binary says '$("$root/usr/bin/herald" --version)'"
"${checks[@]}" config-drift "$source_dir/config/herald.json" "$root/etc/herald/herald.json"
"$root/usr/bin/herald" --help >"$tmp/help.txt"
gzip -dc "$root/usr/share/man/man1/herald.1.gz" >"$tmp/herald.1"
"${checks[@]}" man-vs-help "$tmp/help.txt" "$tmp/herald.1"
ok "config generated from config/herald.json; unit, changelog, copyright as in packaging/; man page $th; binary stripped"

step "the unit's settings"
unit="$root/lib/systemd/system/herald.service"
for setting in Type=notify NotifyAccess=main User=herald Group=herald Restart=on-failure \
               "ExecStart=/usr/bin/herald serve --config /etc/herald/herald.json" StateDirectory=herald \
               NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
               ProtectKernelTunables=yes ProtectKernelModules=yes ProtectKernelLogs=yes \
               ProtectControlGroups=yes "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" \
               RestrictNamespaces=yes LockPersonality=yes MemoryDenyWriteExecute=yes RestrictRealtime=yes \
               SystemCallArchitectures=native CapabilityBoundingSet= UMask=0027 LimitNOFILE=65536 \
               TimeoutStartSec=15min WantedBy=multi-user.target; do
  grep -qxF "$setting" "$unit" || fail "the unit lacks the line '$setting'"
done
for key in RestartSec TimeoutStopSec; do
  [ -n "$("${checks[@]}" unit-values "$unit" "$key")" ] || fail "the unit sets no $key="
done
# Exposure 0-100 (shown divided by 10); the unit scores 16 ("1.6 OK").
systemd-analyze security --offline=true --threshold=25 "$unit" >"$tmp/security.txt" 2>&1 ||
  { cat "$tmp/security.txt" >&2; fail "systemd-analyze security: exposure above 2.5"; }
ok "$(tail -1 "$tmp/security.txt")"

step "systemd-analyze verify (the unit as extracted)"
# --root: the package's files (its /usr/bin/herald is the ExecStart binary) plus this machine's
# units (sysinit.target and the others the unit's dependencies name), nothing installed.
# --man=no: the man page of Documentation= was checked above, and man-db need not be installed.
verify_root="$tmp/verify-root"
cp -al "$root/." "$verify_root" # hard links: nothing in it is modified
cp -an /lib/systemd/system/. "$verify_root/lib/systemd/system/" 2>/dev/null || true
if ! systemd-analyze verify --man=no --root="$verify_root" "$verify_root/lib/systemd/system/herald.service" \
     >"$tmp/verify.txt" 2>&1 || [ -s "$tmp/verify.txt" ]; then
  cat "$tmp/verify.txt" >&2
  fail "systemd-analyze verify: errors or warnings"
fi
ok "systemd-analyze verify: no errors, no warnings"

if [ "$install_phase" = 0 ]; then
  echo
  echo "SKIPPED: $skip_reason"
  echo
  echo "package.deb: all inspection checks passed; install, run and purge skipped (see above)"
  exit 0
fi

# --- install ------------------------------------------------------------------------------------

step "dpkg -i"
installed=1
dpkg_run "$tmp/install.log" -i "$deb" || fail "dpkg -i failed"
cat "$tmp/install.log"
[ "$(dpkg-query -W -f='${Status}' herald)" = "install ok installed" ] || fail "dpkg says $(dpkg-query -W -f='${Status}' herald)"
dpkg-query -W -f='${Conffiles}\n' herald | grep -q '^ /etc/herald/herald.json ' || fail "dpkg lists no conffile /etc/herald/herald.json"

check_user() {
  local passwd group uid gid home shell
  passwd=$(getent passwd herald) || fail "postinst created no user herald"
  group=$(getent group herald) || fail "postinst created no group herald"
  IFS=: read -r _ _ uid gid _ home shell <<<"$passwd"
  [ "$uid" -lt 1000 ] || fail "herald's uid $uid is not a system uid"
  [ "$gid" = "$(cut -d: -f3 <<<"$group")" ] || fail "herald's primary group is $gid, not the group herald"
  [ "$home" = /var/lib/herald ] || fail "herald's home is $home, not /var/lib/herald"
  [ "$shell" = /usr/sbin/nologin ] || fail "herald's shell is $shell, not /usr/sbin/nologin"
  [ -d /var/lib/herald ] || fail "postinst created no /var/lib/herald"
  [ "$(stat -c '%U:%G %a' /var/lib/herald)" = "herald:herald 750" ] ||
    fail "/var/lib/herald is $(stat -c '%U:%G %a' /var/lib/herald), not herald:herald 750"
  echo "$passwd"
}
user_line=$(check_user)
[ "$user_existed" = 1 ] && echo "note: the user herald existed before the test: the creation check is an idempotency check here"
cmp /etc/herald/herald.json "$root/etc/herald/herald.json" || fail "/etc/herald/herald.json is not the packaged config"
[ "$(/usr/bin/herald --version)" = "herald $version" ] || fail "/usr/bin/herald --version: $(/usr/bin/herald --version)"
wants=/etc/systemd/system/multi-user.target.wants/herald.service
[ "$(readlink "$wants")" = /lib/systemd/system/herald.service ] || fail "postinst did not enable the unit ($wants)"
ok "installed; user $user_line; /var/lib/herald herald:herald 750; the unit enabled (not started: no systemd running)"

step "dpkg -i again (postinst is idempotent)"
dpkg_run "$tmp/reinstall.log" -i "$deb" || fail "installing the package a second time failed"
[ "$(check_user)" = "$user_line" ] || fail "the second install changed the user: $(getent passwd herald)"
ok "reinstalled; the user and /var/lib/herald unchanged"

step "systemd-analyze verify (the unit as installed)"
if ! systemd-analyze verify --man=no /lib/systemd/system/herald.service >"$tmp/verify.txt" 2>&1 ||
   [ -s "$tmp/verify.txt" ]; then
  cat "$tmp/verify.txt" >&2
  fail "systemd-analyze verify: errors or warnings"
fi
ok "systemd-analyze verify: no errors, no warnings"

# --- run the unit's ExecStart line as systemd would ---------------------------------------------

installed_unit=/lib/systemd/system/herald.service
mapfile -d '' exec_start < <("${checks[@]}" exec-start "$installed_unit")
[ ${#exec_start[@]} -gt 0 ] || fail "could not read ExecStart= from $installed_unit"
value() { "${checks[@]}" unit-values "$installed_unit" "$1"; }
run_user=$(value User)
run_group=$(value Group)
state_dir=/var/lib/$(value StateDirectory)
state_mode=$(value StateDirectoryMode)
work_dir=$(value WorkingDirectory)
umask_value=$(value UMask)
nofile=$(value LimitNOFILE)
stop_timeout=$(value TimeoutStopSec | sed 's/s$//')
config=""
for i in "${!exec_start[@]}"; do
  [ "${exec_start[$i]}" = --config ] && config=${exec_start[$((i + 1))]}
done
[ -n "$config" ] || fail "ExecStart= names no --config"
listen=$("${checks[@]}" config-value "$config" listen)
host=${listen%:*}
[ "$listen" = 127.0.0.1:8080 ] || fail "the installed config listens on '$listen', not 127.0.0.1:8080"

# port: the packaged one when it is free, else one the kernel hands out (then --listen is added).
listen_args=()
choose_port() {
  local why
  port=${listen##*:}
  listen_args=()
  if ! why=$("${checks[@]}" port-free "$host" "$port"); then
    port=$("${checks[@]}" free-port "$host")
    listen_args=(--listen "$host:$port")
    echo "note: port ${listen##*:} is taken on this machine ($why); adding --listen $host:$port to the ExecStart line"
  fi
}

# systemd creates the StateDirectory owned by the unit's user, with StateDirectoryMode.
"${as_root[@]}" install -d -o "$run_user" -g "$run_group" -m "${state_mode:-0755}" "$state_dir"

# LimitNOFILE= as systemd sets it, unless this machine's hard limit is lower and cannot be raised
# here (a container without CAP_SYS_RESOURCE); systemd itself can.
hard_nofile=$(ulimit -Hn)
if [ "$hard_nofile" != unlimited ] && [ "$hard_nofile" -lt "$nofile" ] && ! (ulimit -n "$nofile") 2>/dev/null; then
  echo "note: LimitNOFILE=$nofile is above this machine's hard limit $hard_nofile, which cannot be raised here: running with $hard_nofile"
  nofile=$hard_nofile
fi

# strace writes its traces as herald's user.
"${as_root[@]}" install -d -o "$run_user" -g "$run_group" -m 0700 "$tmp/trace"
notify_problems=()

# start_traced NAME WORD...: runs the command line WORD... as the unit would run its ExecStart=
# (its user and group, working directory, umask, LimitNOFILE, a clean environment with
# $NOTIFY_SOCKET, no capabilities, no new privileges), under strace -f, and waits until
# GET /readyz on $host:$port answers 200. Sets run_pid and herald_pid.
start_traced() {
  local name=$1; shift
  local notify_socket="$tmp/notify-$name/socket"
  mkdir -m 0711 "$tmp/notify-$name"
  "${checks[@]}" notify-listen "$notify_socket" "$tmp/notify-$name.log" &
  notify_pid=$!
  for _ in $(seq 1 100); do [ -S "$notify_socket" ] && break; sleep 0.05; done
  [ -S "$notify_socket" ] || fail "the notify listener did not start"

  cat >"$tmp/launch-$name.sh" <<EOF
#!/bin/sh
set -e
cd "$work_dir"
umask $umask_value
ulimit -n $nofile
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \\
  HOME=$state_dir USER=$run_user LOGNAME=$run_user SHELL=/usr/sbin/nologin \\
  STATE_DIRECTORY=$state_dir NOTIFY_SOCKET=$notify_socket \\
  setpriv --reuid=$run_user --regid=$run_group --init-groups --nnp --bounding-set=-all --inh-caps=-all -- \\
  strace -f -qq -o $tmp/trace/$name.txt -- $(printf '%q ' "$@")
EOF
  chmod 0755 "$tmp/launch-$name.sh"
  echo "command: $*"
  echo "as $run_user:$run_group in $work_dir, umask $umask_value, LimitNOFILE $nofile, NOTIFY_SOCKET=$notify_socket, under strace -f"
  "${as_root[@]}" "$tmp/launch-$name.sh" >"$tmp/$name.log" 2>&1 &
  run_pid=$!

  local started=$SECONDS code=""
  herald_pid=""
  while [ $((SECONDS - started)) -lt 60 ]; do
    if ! running "$run_pid"; then
      cat "$tmp/$name.log" >&2
      fail "herald exited before it was ready"
    fi
    [ -n "$herald_pid" ] || herald_pid=$(herald_below "$run_pid")
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$host:$port/readyz" || true)
    [ "$code" = 200 ] && break
    sleep 0.2
  done
  [ "$code" = 200 ] || { tail -20 "$tmp/$name.log" >&2; fail "GET http://$host:$port/readyz did not answer 200 within 60 s (last: $code)"; }
  [ -n "$herald_pid" ] || herald_pid=$(herald_below "$run_pid")
  [ -n "$herald_pid" ] || fail "no process herald below the launcher (pid $run_pid) this test started"
  ok "GET http://$host:$port/readyz: 200 after $((SECONDS - started)) s; herald is pid $herald_pid, user $(stat -c %U "/proc/$herald_pid")"

  for _ in $(seq 1 50); do grep -qx READY=1 "$tmp/notify-$name.log" && break; sleep 0.1; done
  grep -qx READY=1 "$tmp/notify-$name.log" ||
    notify_problems+=("$name: herald sent no READY=1 on \$NOTIFY_SOCKET: under Type=notify systemd would kill it after TimeoutStartSec")
}

# stop_traced NAME: SIGTERM to this test's herald, as systemctl stop sends it; it must exit 0
# within TimeoutStopSec and have logged JSON lines only; then its system calls are checked.
stop_traced() {
  local name=$1
  step "$name: SIGTERM"
  "${as_root[@]}" kill -TERM "$herald_pid"
  local started=$SECONDS rc=0
  while running "$run_pid" && [ $((SECONDS - started)) -lt "${stop_timeout:-60}" ]; do sleep 0.1; done
  running "$run_pid" && fail "herald did not stop within TimeoutStopSec=${stop_timeout}s of SIGTERM"
  wait "$run_pid" || rc=$?
  run_pid=""
  herald_pid=""
  [ "$rc" = 0 ] || { tail -20 "$tmp/$name.log" >&2; fail "herald exited with $rc after SIGTERM, not 0"; }
  ok "herald stopped with exit code 0 after $((SECONDS - started)) s"
  grep -qx STOPPING=1 "$tmp/notify-$name.log" || notify_problems+=("$name: herald sent no STOPPING=1 on \$NOTIFY_SOCKET when it stopped")
  stop_notify_listener
  echo "notifications received: $(grep -v '^#' "$tmp/notify-$name.log" | tr '\n' ' ')"

  step "$name: the logs (what the journal would get)"
  local events
  events=$("${checks[@]}" logs "$tmp/$name.log")
  for event in herald.started herald.stopped; do
    grep -qw "$event" <<<"$events" || fail "no $event line in herald's logs"
  done
  ok "$(wc -l <"$tmp/$name.log") JSON lines, events: $(tr ' ' '\n' <<<"$events" | sort -u | tr '\n' ' ')"

  step "$name: system calls against the unit's sandbox"
  "${as_root[@]}" cat "$tmp/trace/$name.txt" >"$tmp/strace-$name.txt"
  "${checks[@]}" syscalls "$tmp/strace-$name.txt" "$installed_unit"
}

# post_message BIZ_ID CHANNEL...: submits ORDER_SHIPPED for u-123 on the channels; prints the id.
post_message() {
  local biz_id=$1; shift
  local body answer
  body=$(python3 -c 'import json, sys
to = {"sms": "+8613800000000", "wechat": "oAbC123", "app": "device-token-1"}
print(json.dumps({"biz_type": "ORDER_SHIPPED", "biz_id": sys.argv[1], "user_id": "u-123",
                  "channels": sys.argv[2:], "to": {c: to[c] for c in sys.argv[2:]},
                  "template": "order_shipped", "params": {"order_no": "20260907-001"}}))' "$biz_id" "$@")
  answer=$(curl -s -w '\n%{http_code}' --max-time 10 -X POST "http://$host:$port/v1/messages" -H 'Content-Type: application/json' -d "$body")
  [ "$(tail -1 <<<"$answer")" = 202 ] || fail "POST /v1/messages answered $(tail -1 <<<"$answer"): $(head -1 <<<"$answer")"
  head -1 <<<"$answer" | python3 -c 'import json,sys; print(json.load(sys.stdin)["message_id"])'
}

step "running ExecStart as the unit's user (the packaged configuration)"
choose_port
start_traced packaged "${exec_start[@]}" "${listen_args[@]}"
message_id=$(post_message package-test-1 sms wechat app)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://$host:$port/v1/messages/$message_id")
[ "$code" = 200 ] || fail "GET /v1/messages/$message_id answered $code"
db=$("${checks[@]}" config-value "$config" database)
db_file=${db#sqlite:}
"${as_root[@]}" test -f "$db_file" || fail "no database at $db_file"
[ "$("${as_root[@]}" stat -c %U "$db_file")" = "$run_user" ] || fail "$db_file belongs to $("${as_root[@]}" stat -c %U "$db_file"), not $run_user"
ok "POST /v1/messages: 202 ($message_id), GET: 200; the database $db_file belongs to $run_user"
stop_traced packaged

# docs/operations.md: herald migrate and herald keys by hand run as herald, so the database stays
# the service's.
step "herald migrate and herald keys as the unit's user (runuser), as documented"
as_herald=("${as_root[@]}" runuser -u "$run_user" --)
(cd / && "${as_herald[@]}" /usr/bin/herald migrate --config "$config") >"$tmp/migrate.log" 2>&1 ||
  { cat "$tmp/migrate.log" >&2; fail "runuser -u $run_user -- herald migrate --config $config failed"; }
key=$(cd / && "${as_herald[@]}" /usr/bin/herald keys create --config "$config" --tenant package-test --scopes read 2>"$tmp/keys.log") ||
  { cat "$tmp/keys.log" >&2; fail "runuser -u $run_user -- herald keys create failed"; }
[ -n "$key" ] || fail "herald keys create printed no key"
(cd / && "${as_herald[@]}" /usr/bin/herald keys list --config "$config") 2>&1 | grep -q package-test ||
  fail "herald keys list does not show the key of tenant package-test"
foreign=$("${as_root[@]}" find "$state_dir" ! -user "$run_user")
[ -z "$foreign" ] || fail "files in $state_dir not owned by $run_user: $foreign"
ok "migrate, keys create, keys list as $run_user; every file in $state_dir still belongs to $run_user"

# The same sandbox checks on the code paths the packaged configuration never takes: a webhook
# provider call (libcurl) and, when the test has one, PostgreSQL (libpq).
step "running ExecStart as the unit's user with a webhook channel at herald sim-provider"
/usr/bin/herald sim-provider --listen 127.0.0.1:0 >"$tmp/sim.out" 2>"$tmp/sim.err" &
sim_pid=$!
sim_port=""
for _ in $(seq 1 100); do
  sim_port=$(python3 -c 'import json,sys
for line in open(sys.argv[1]):
    if "sim_provider.listening" in line: print(json.loads(line)["port"]); break' "$tmp/sim.out" 2>/dev/null || true)
  [ -n "$sim_port" ] && break
  running "$sim_pid" || { cat "$tmp/sim.err" >&2; fail "herald sim-provider exited"; }
  sleep 0.1
done
[ -n "$sim_port" ] || fail "herald sim-provider did not say where it listens: $(cat "$tmp/sim.out" "$tmp/sim.err")"
mkdir -m 0755 "$tmp/config"
"${checks[@]}" webhook-config "$config" sms "http://127.0.0.1:$sim_port/sms" "$tmp/config/webhook.json"
webhook_line=()
for word in "${exec_start[@]}"; do
  [ "$word" = "$config" ] && word="$tmp/config/webhook.json"
  webhook_line+=("$word")
done
database_note="the packaged SQLite database"
if [ -n "$pg_url" ]; then
  pg_db="herald_package_$$"
  psql "$pg_url" -qc "DROP DATABASE IF EXISTS $pg_db" >/dev/null 2>&1 || true
  psql "$pg_url" -qc "CREATE DATABASE $pg_db" >/dev/null || fail "could not create the database $pg_db at $pg_url"
  webhook_line+=(--db "${pg_url%/*}/$pg_db")
  database_note="PostgreSQL (${pg_url%/*}/$pg_db, from HERALD_TEST_POSTGRES_URL)"
else
  echo "note: HERALD_TEST_POSTGRES_URL is not set: this run uses SQLite; PostgreSQL is not traced"
fi
echo "sms is a webhook to http://127.0.0.1:$sim_port/sms; database: $database_note"
choose_port
start_traced webhook "${webhook_line[@]}" "${listen_args[@]}"
message_id=$(post_message package-test-2 sms)
status=""
started=$SECONDS
while [ $((SECONDS - started)) -lt 30 ]; do
  curl -s --max-time 10 "http://$host:$port/v1/messages/$message_id" >"$tmp/message.json" || true
  status=$("${checks[@]}" task-status "$tmp/message.json" sms)
  [ "$status" = SENT ] && break
  sleep 0.2
done
[ "$status" = SENT ] || fail "the sms task of $message_id is '$status', not SENT, after 30 s: $(cat "$tmp/message.json")"
effective=$(curl -s --max-time 10 "http://127.0.0.1:$sim_port/calls/summary" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["effective_deliveries"])')
[ "$effective" = 1 ] || fail "herald sim-provider counts $effective deliveries, not 1"
ok "POST /v1/messages: 202 ($message_id); the sms task SENT through the webhook; sim-provider got it once"
stop_traced webhook
kill "$sim_pid" 2>/dev/null || true
wait "$sim_pid" 2>/dev/null || true
sim_pid=""
if [ -n "$pg_db" ]; then
  psql "$pg_url" -qc "DROP DATABASE $pg_db" >/dev/null || fail "could not drop the database $pg_db"
  pg_db=""
fi

# --- remove and purge ---------------------------------------------------------------------------

step "dpkg --remove"
dpkg_run "$tmp/remove.log" --remove herald || fail "dpkg --remove herald failed"
cat "$tmp/remove.log"
[ ! -e /usr/bin/herald ] || fail "/usr/bin/herald is still there after remove"
[ ! -e /lib/systemd/system/herald.service ] || fail "the unit is still there after remove"
[ -f /etc/herald/herald.json ] || fail "remove deleted the conffile /etc/herald/herald.json"
"${as_root[@]}" test -f "$db_file" || fail "remove deleted the database $db_file"
ok "binary and unit gone; the config and /var/lib/herald kept"

step "dpkg --purge"
dpkg_run "$tmp/purge.log" --purge herald || fail "dpkg --purge herald failed"
cat "$tmp/purge.log"
installed=0
if dpkg-query -W -f='${Status}' herald 2>/dev/null | grep -qv not-installed; then
  fail "dpkg still knows herald after purge: $(dpkg-query -W -f='${Status}' herald)"
fi
for path in /usr/bin/herald /etc/herald /lib/systemd/system/herald.service /usr/share/man/man1/herald.1.gz \
            /usr/share/doc/herald /var/lib/herald "$wants" /etc/systemd/system/herald.service \
            /var/lib/systemd/deb-systemd-helper-enabled/herald.service.dsh-also \
            /var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/herald.service \
            /var/lib/systemd/deb-systemd-helper-masked/herald.service; do
  [ ! -e "$path" ] && [ ! -L "$path" ] || fail "$path is still there after purge"
done
getent passwd herald >/dev/null || fail "purge deleted the user herald (the package keeps it, as documented)"
ok "every file gone; the user herald kept (removed by this test's cleanup)"

if [ ${#notify_problems[@]} -gt 0 ]; then
  printf 'FAIL: %s\n' "${notify_problems[@]}" >&2
  exit 1
fi
echo
echo "package.deb: all checks passed"
