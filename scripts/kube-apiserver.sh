#!/usr/bin/env bash
# Real Kubernetes API server (+ etcd) on 127.0.0.1 for integration tests.
#
# kube-apiserver is built offline from Debian's `kubernetes` source package
# (vendored Go modules, no network besides the Debian apt mirror).
#
#   scripts/kube-apiserver.sh build        # install deps, fetch source, build once (cached)
#   scripts/kube-apiserver.sh path         # print cached binary path (exit 1 if missing)
#   scripts/kube-apiserver.sh start DIR    # start etcd + apiserver, print DIR/kubeconfig
#   scripts/kube-apiserver.sh stop DIR     # stop both
#
# Environment:
#   KUBE_APISERVER_CACHE          cache dir (default $HOME/.cache/gpu-pool-console)
#   KUBE_APISERVER_START_TIMEOUT  seconds to wait for /readyz (default 60)
#   KUBE_APISERVER_AUTHORIZATION  --authorization-mode (default AlwaysAllow; RBAC for the RBAC tests)
#
# See docs/kube-apiserver.md.
set -euo pipefail

CACHE="${KUBE_APISERVER_CACHE:-${HOME:-/root}/.cache/gpu-pool-console}"
BIN="$CACHE/kube-apiserver"
MARKER="$CACHE/kube-apiserver.version"
START_TIMEOUT="${KUBE_APISERVER_START_TIMEOUT:-60}"
AUTHORIZATION="${KUBE_APISERVER_AUTHORIZATION:-AlwaysAllow}"
APT_PKGS=(golang-go etcd-server rsync dpkg-dev openssl curl)
SRC_LIST=/etc/apt/sources.list.d/gpu-pool-console-deb-src.sources

log() { echo "kube-apiserver.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# ---------------------------------------------------------------- build ----

have_binary() { [ -x "$BIN" ] && [ -s "$MARKER" ]; }

missing_pkgs() {
  local p
  for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}

# Add deb-src entries mirroring the configured Debian `deb` entries (only if
# there are none yet). Writes a separate deb822 file; existing files untouched.
ensure_deb_src() {
  if grep -rqsE '^[[:space:]]*deb-src[[:space:]]|^[[:space:]]*Types:.*deb-src' \
       /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; then
    return 1   # already configured
  fi
  local tmp; tmp="$(mktemp)"
  # deb822 stanzas pointing at Debian (debian.org / snapshot) -> same stanza, Types: deb-src
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    awk 'BEGIN{RS=""; ORS="\n\n"}
         /URIs:[^\n]*debian/ && /Types:[^\n]*deb/ {
           n=split($0, L, "\n"); out="";
           for (i=1;i<=n;i++) {
             if (L[i] ~ /^Types:/) L[i]="Types: deb-src";
             if (L[i] ~ /^#/) continue;
             out = out L[i] "\n";
           }
           printf "%s\n", out }' "$f" >> "$tmp"
  done
  # one-line style: deb [opts] URI suite comps -> deb822 stanza
  if [ -f /etc/apt/sources.list ]; then
    awk '$1=="deb" && /debian/ {
           i=2; signed="";
           if ($2 ~ /^\[/) { while ($i !~ /\]$/) { if ($i ~ /signed-by=/) {s=$i; sub(/.*signed-by=/,"",s); sub(/\]$/,"",s); signed=s}; i++ }
                             if ($i ~ /signed-by=/) {s=$i; sub(/.*signed-by=/,"",s); sub(/\]$/,"",s); signed=s}; i++ }
           uri=$i; suite=$(i+1); comps="";
           for (j=i+2;j<=NF;j++) comps=comps (comps==""?"":" ") $j;
           printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n", uri, suite, comps;
           if (signed!="") printf "Signed-By: %s\n", signed;
           printf "\n" }' /etc/apt/sources.list >> "$tmp"
  fi
  if [ ! -s "$tmp" ]; then
    # Fallback: Debian release of this machine from the main mirror.
    local codename
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" "$codename" > "$tmp"
  fi
  log "adding deb-src entries in $SRC_LIST"
  as_root install -m 0644 "$tmp" "$SRC_LIST"
  rm -f "$tmp"
  return 0
}

cmd_build() {
  if have_binary; then
    echo "$BIN"
    return 0
  fi
  mkdir -p "$CACHE"
  # Serialise concurrent builds (several test sessions may call `build`).
  exec 9>"$CACHE/.build.lock"
  flock 9
  if have_binary; then echo "$BIN"; return 0; fi

  local t0=$SECONDS updated=0
  if ensure_deb_src; then
    as_root apt-get update -qq; updated=1
  fi
  local missing; missing="$(missing_pkgs | tr '\n' ' ')"
  if [ -n "${missing// /}" ]; then
    log "installing: $missing"
    [ "$updated" = 1 ] || { as_root apt-get update -qq; updated=1; }
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
  fi
  if [ -z "$(apt-cache showsrc kubernetes 2>/dev/null | head -1)" ]; then
    [ "$updated" = 1 ] || as_root apt-get update -qq
  fi

  local srcroot="$CACHE/src" tree srcver
  # (no source tree yet on a fresh machine: find fails, which pipefail must not turn into an exit)
  tree="$(find "$srcroot" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' 2>/dev/null | head -1 || true)"
  if [ -z "$tree" ] || [ ! -f "$tree/.gpc-unpacked" ]; then
    apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Version:' \
      || die "no source package 'kubernetes' (deb-src missing?)"
    log "fetching the kubernetes source package into $srcroot"
    rm -rf "$srcroot"; mkdir -p "$srcroot"
    # apt-get source picks the candidate version (e.g. the bookworm-security one).
    (cd "$srcroot" && apt-get source -qq kubernetes >&2)
    tree="$(find "$srcroot" -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
    [ -n "$tree" ] || die "apt-get source did not produce a tree in $srcroot"
    touch "$tree/.gpc-unpacked"
  fi
  srcver="$(basename "$(ls "$srcroot"/kubernetes_*.dsc | head -1)" .dsc)"; srcver="${srcver#kubernetes_}"

  # Upstream version, e.g. 1.20.5+really1.20.2-1.1+deb12u1 -> v1.20.2
  local upver="${srcver%%-*}"; upver="${upver##*really}"; upver="${upver#*:}"
  local out="$tree/_output/bin/kube-apiserver"

  # Kubernetes 1.20 builds in GOPATH mode (hack/lib/init.sh sets GO111MODULE=off);
  # a plain module-mode `go build -mod=vendor` fails with "updates to go.mod needed".
  log "building kube-apiserver v$upver with make (about 6-7 minutes on 2 cores)"
  mkdir -p "$tree/.go/src/k8s.io"
  ln -sfn ../../.. "$tree/.go/src/k8s.io/kubernetes"
  if ! (
    cd "$tree"
    export GOPATH="$tree/.go" GOPROXY=off GOFLAGS=-mod=vendor CGO_ENABLED=0 GOTOOLCHAIN=local
    export KUBE_GIT_VERSION="v$upver" KUBE_GIT_TREE_STATE=clean GOLDFLAGS="-s -w"
    nice -n 10 make WHAT=cmd/kube-apiserver
  ) >&2; then
    log "make failed; falling back to a GOPATH-mode go build"
    out="$tree/_output/gpc/kube-apiserver"
    mkdir -p "$(dirname "$out")"
    local pkg=k8s.io/kubernetes/vendor/k8s.io/component-base/version
    local ldflags="-s -w -X $pkg.gitVersion=v$upver -X $pkg.gitMajor=${upver%%.*}"
    ldflags+=" -X $pkg.gitMinor=$(echo "$upver" | cut -d. -f2) -X $pkg.gitTreeState=clean"
    (
      cd "$tree/.go/src/k8s.io/kubernetes"
      export GOPATH="$tree/.go" GO111MODULE=off GOPROXY=off CGO_ENABLED=0 GOTOOLCHAIN=local
      unset GOFLAGS
      nice -n 10 go build -ldflags "$ldflags" -o "$out" ./cmd/kube-apiserver
    ) >&2
  fi
  "$out" --version >/dev/null 2>&1 || die "built binary does not run: $out"
  install -m 0755 "$out" "$BIN.tmp" && mv -f "$BIN.tmp" "$BIN"
  printf 'kube-apiserver %s (debian source %s, %s)\n' \
    "$("$BIN" --version 2>&1 | awk '{print $2}')" "$srcver" "$(go version | awk '{print $3}')" > "$MARKER"
  log "built in $((SECONDS - t0))s: $(cat "$MARKER")"
  echo "$BIN"
}

cmd_path() {
  if have_binary; then echo "$BIN"; else exit 1; fi
}

# ---------------------------------------------------------------- start ----

free_port() {
  # Pick below the kernel's ephemeral range (outgoing connections, e.g. from
  # another apiserver to its etcd, grab ports there) and check all sockets.
  local lo port
  lo="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  [ "$lo" -gt 12000 ] || lo=32768
  for _ in $(seq 1 200); do
    port=$(( 10000 + RANDOM % (lo - 10000) ))
    if ! ss -Htan "( sport = :$port )" 2>/dev/null | grep -q .; then
      echo "$port"; return 0
    fi
  done
  die "no free port found"
}

pid_is() {  # pid_is PID NAME -> true if PID alive and its command is NAME
  local pid="$1" name="$2"
  [ -n "$pid" ] && alive "$pid" || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | awk '{print $1}' | grep -q "$name\$"
}

read_pids() {  # sets APISERVER_PID ETCD_PID from DIR/pids
  APISERVER_PID="" ETCD_PID=""
  [ -f "$1/pids" ] || return 1
  APISERVER_PID="$(sed -n 1p "$1/pids")"
  ETCD_PID="$(sed -n 2p "$1/pids")"
}

readyz() {  # readyz PORT TOKEN
  curl -fsS -m 3 -k -H "Authorization: Bearer $2" "https://127.0.0.1:$1/readyz" 2>/dev/null | grep -qx ok
}

gen_certs() {  # gen_certs DIR : CA, serving cert for 127.0.0.1/localhost, SA key
  local d="$1/pki"
  mkdir -p "$d"
  [ -s "$d/serving.crt" ] && [ -s "$d/sa.key" ] && return 0
  (
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=gpu-pool-console-test-ca" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr \
      -subj "/CN=kube-apiserver" 2>/dev/null
    printf '%s\n' \
      "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1" \
      "authorityKeyIdentifier=keyid,issuer" \
      "subjectKeyIdentifier=hash" > serving.ext
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -out serving.crt -days 3650 -extfile serving.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 600 ./*.key
  )
}

dump_logs() {
  local dir="$1" f
  for f in etcd.log kube-apiserver.log; do
    [ -f "$dir/$f" ] || continue
    echo "----- tail $dir/$f -----" >&2
    tail -n 30 "$dir/$f" >&2
  done
}

cmd_start() {
  local dir="${1:-}"
  [ -n "$dir" ] || usage
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  have_binary || die "kube-apiserver not built; run: $0 build"
  command -v etcd >/dev/null || die "etcd not installed; run: $0 build"

  # Idempotent: already running and ready -> just print the kubeconfig.
  if read_pids "$dir" && pid_is "$APISERVER_PID" kube-apiserver && pid_is "$ETCD_PID" etcd \
     && [ -f "$dir/env" ]; then
    # shellcheck disable=SC1091
    . "$dir/env"
    if readyz "$KUBE_APISERVER_PORT" "$KUBE_TOKEN"; then echo "$dir/kubeconfig"; return 0; fi
  fi
  cmd_stop "$dir" >/dev/null 2>&1 || true

  gen_certs "$dir"
  local token
  if [ -s "$dir/tokens.csv" ]; then
    token="$(cut -d, -f1 "$dir/tokens.csv" | head -1)"
  else
    token="$(openssl rand -hex 24)"
    printf '%s,admin,admin-uid,"system:masters"\n' "$token" > "$dir/tokens.csv"
    chmod 600 "$dir/tokens.csv"
  fi

  local etcd_port peer_port api_port attempt
  for attempt in 1 2 3; do
    etcd_port="$(free_port)"; peer_port="$(free_port)"; api_port="$(free_port)"
    while [ "$peer_port" = "$etcd_port" ]; do peer_port="$(free_port)"; done
    while [ "$api_port" = "$etcd_port" ] || [ "$api_port" = "$peer_port" ]; do api_port="$(free_port)"; done

    mkdir -p "$dir/etcd"
    chmod 700 "$dir/etcd"
    setsid etcd \
      --name kubetest \
      --data-dir "$dir/etcd" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" \
      --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "kubetest=http://127.0.0.1:$peer_port" \
      --initial-cluster-state new \
      > "$dir/etcd.log" 2>&1 < /dev/null &
    local etcd_pid=$!

    setsid "$BIN" \
      --etcd-servers "http://127.0.0.1:$etcd_port" \
      --bind-address 127.0.0.1 \
      --advertise-address 127.0.0.1 \
      --secure-port "$api_port" \
      --insecure-port 0 \
      --cert-dir "$dir/pki" \
      --tls-cert-file "$dir/pki/serving.crt" \
      --tls-private-key-file "$dir/pki/serving.key" \
      --token-auth-file "$dir/tokens.csv" \
      --authorization-mode "$AUTHORIZATION" \
      --anonymous-auth=false \
      --service-account-issuer https://kubernetes.default.svc.cluster.local \
      --service-account-key-file "$dir/pki/sa.pub" \
      --service-account-signing-key-file "$dir/pki/sa.key" \
      --service-cluster-ip-range 10.0.0.0/24 \
      --endpoint-reconciler-type none \
      --disable-admission-plugins ServiceAccount \
      --profiling=false \
      --logtostderr=true \
      --v=1 \
      > "$dir/kube-apiserver.log" 2>&1 < /dev/null &
    local api_pid=$!
    printf '%s\n%s\n' "$api_pid" "$etcd_pid" > "$dir/pids"

    cat > "$dir/env" <<EOF
KUBE_APISERVER_PORT=$api_port
KUBE_APISERVER_URL=https://127.0.0.1:$api_port
KUBE_TOKEN=$token
ETCD_PORT=$etcd_port
ETCD_PEER_PORT=$peer_port
KUBECONFIG=$dir/kubeconfig
EOF

    local ca_b64; ca_b64="$(base64 -w0 < "$dir/pki/ca.crt")"
    cat > "$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $ca_b64
users:
- name: admin
  user:
    token: $token
contexts:
- name: test
  context:
    cluster: test
    user: admin
    namespace: default
current-context: test
EOF
    chmod 600 "$dir/kubeconfig"

    local deadline=$((SECONDS + START_TIMEOUT))
    until readyz "$api_port" "$token"; do
      if ! alive "$etcd_pid" || ! alive "$api_pid"; then
        cmd_stop "$dir" >/dev/null 2>&1 || true
        if [ "$attempt" -lt 3 ] && grep -qs 'address already in use' "$dir/etcd.log" "$dir/kube-apiserver.log"; then
          log "port conflict, retrying with other ports"
          continue 2
        fi
        log "a process exited during startup"
        dump_logs "$dir"; exit 1
      fi
      if [ "$SECONDS" -ge "$deadline" ]; then
        log "timed out after ${START_TIMEOUT}s waiting for https://127.0.0.1:$api_port/readyz"
        dump_logs "$dir"; cmd_stop "$dir" >/dev/null 2>&1 || true; exit 1
      fi
      sleep 0.3
    done
    echo "$dir/kubeconfig"
    return 0
  done
  die "could not start"
}

# ----------------------------------------------------------------- stop ----

alive() {  # running and not a zombie (the orphaned processes' reaper may be slow)
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

stop_pid() {  # stop_pid PID NAME SIGNAL
  local pid="$1" name="$2" sig="${3:-TERM}"
  pid_is "$pid" "$name" || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive "$pid" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
  local dir="${1:-}"
  [ -n "$dir" ] || usage
  [ -d "$dir" ] || return 0
  read_pids "$dir" || return 0
  # kube-apiserver is stateless: SIGKILL it (a graceful TERM takes ~3 s).
  stop_pid "$APISERVER_PID" kube-apiserver KILL
  stop_pid "$ETCD_PID" etcd TERM
  rm -f "$dir/pids"
  echo "stopped"
}

case "${1:-}" in
  build) cmd_build ;;
  path)  cmd_path ;;
  start) shift; cmd_start "$@" ;;
  stop)  shift; cmd_stop "$@" ;;
  *)     usage ;;
esac
