#!/usr/bin/env bash
# Makes the certificates of a herald cluster's port (docs/cluster.md, "Certificates"):
#   scripts/cluster-certs.sh DIR NODE_ID...
# DIR/ca.pem and DIR/ca.key: the cluster's own certificate authority (made once; kept if
# present, so running the script again adds or renews nodes under the same authority).
# DIR/NODE_ID.pem and DIR/NODE_ID.key: each node's certificate (signed by the authority, valid
# 825 days, usable as TLS client and server) and its private key. Keys are written 0600.
# Each node's `cluster.tls` then names its own pair and the authority:
#   "tls": {"certificate": "DIR/n1.pem", "key": "DIR/n1.key", "ca_file": "DIR/ca.pem"}
# Keep ca.key off the nodes: it only signs. Needs the openssl command.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 DIR NODE_ID..." >&2
  exit 2
fi
dir=$1
shift
mkdir -p "$dir"
umask 077

if [[ ! -f "$dir/ca.pem" || ! -f "$dir/ca.key" ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=herald cluster authority" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
fi

for node in "$@"; do
  if [[ ! "$node" =~ ^[A-Za-z0-9._-]{1,64}$ ]]; then
    echo "$0: '$node' is not a node id (letters, digits, '.', '_', '-'; at most 64)" >&2
    exit 2
  fi
  # Written beside the old pair and moved over it at the end: a node reading its files while
  # they are renewed finds the old pair or the new one, never half of each.
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$node" \
    -keyout "$dir/$node.key.new" -out "$dir/$node.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 825 -out "$dir/$node.pem.new" \
    -extfile <(printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n') \
    2>/dev/null
  rm -f "$dir/$node.csr"
  chmod 0644 "$dir/$node.pem.new"
  mv "$dir/$node.key.new" "$dir/$node.key"
  mv "$dir/$node.pem.new" "$dir/$node.pem"
done
chmod 0644 "$dir/ca.pem"
echo "certificates in $dir: ca.pem, $(printf '%s.pem ' "$@")(keys beside them)"
