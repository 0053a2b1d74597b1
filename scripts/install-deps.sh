#!/usr/bin/env bash
# Installs what `make run` and `make test` need beyond Go, on Debian 12 or
# 13 (apt): make; a C compiler and the C library's headers, since
# `go test -race` needs cgo; Google's Firestore and Pub/Sub emulators (with
# a Java runtime) and so the Cloud CLI, gcloud, which a test also drives
# against the Compute fake; shellcheck, which checks the rendered startup
# script; for `make image-test`, which boots that script on a Debian 13 and
# a Debian 12 in a container, debootstrap, systemd-container
# (systemd-nspawn) and iproute2 (network namespaces); nftables, whose nft
# a test loads the VM's rendered filter with; tinyproxy, which
# `IMAGE_BENCH_ENGINE=tinyproxy make image-bench` measures beside the
# project's engine; Debian's Chromium, which the web console's browser
# test drives headless (dev/localstack, through the Go module chromedp);
# Hetzner's own CLI (Debian's hcloud-cli), which a test drives against
# the Hetzner fake; and AWS's own CLI (Debian's awscli, version 2), which a
# test drives against the EC2 fake, and whose botocore data holds the EC2
# and STS service models the fake is checked against; Azure's own CLI
# (Debian's azure-cli), which a test drives against the Azure fake; and
# PySocks (Debian's python3-socks), the SOCKS5 client the engine's UDP
# ASSOCIATE test drives (internal/vm/engine's TestSocks5UDPPySocks).
#
# Everything but the emulators comes from Debian's own repository. The
# emulators come from Google's Cloud CLI apt source: where they are missing
# and no configured source has them, the script adds that source as Google
# documents it, if it can be reached; if it cannot, it stops with one line
# naming the packages and the command that adds the source.
#
# It installs only what is missing, so it is cheap to run every time: make
# test, run, image-test and bench run it first. Without root it stops with
# the one command that installs the rest.
set -euo pipefail

# Google's Cloud CLI apt source and its key, as Google's install guide for
# Debian and Ubuntu gives them.
google_key_url=https://packages.cloud.google.com/apt/doc/apt-key.gpg
google_keyring=/usr/share/keyrings/cloud.google.gpg
google_list=/etc/apt/sources.list.d/google-cloud-sdk.list
google_source="deb [signed-by=$google_keyring] https://packages.cloud.google.com/apt cloud-sdk main"
add_google="curl -fsSL $google_key_url | gpg --dearmor -o $google_keyring && echo '$google_source' > $google_list && apt-get update"

debian=() # missing, from Debian's repository
google=() # missing, from Google's Cloud CLI apt source
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
has make || debian+=(make)
# -race needs cgo: a C compiler, and the C library's headers it compiles
# the runtime's cgo parts against.
has gcc || debian+=(gcc)
[ -f /usr/include/stdio.h ] || debian+=(libc6-dev)
# The emulators' Java: Debian's default runtime (17 in Debian 12, 21 in 13).
has java || debian+=(default-jre-headless)
has tinyproxy || debian+=(tinyproxy)
has shellcheck || debian+=(shellcheck)
has debootstrap || debian+=(debootstrap)
has systemd-nspawn || debian+=(systemd-container)
has ip || debian+=(iproute2)
# nft, which a test loads the VM's rendered filter with (in a network
# namespace of its own; internal/vm/agent's TestFilterLoads).
has nft || debian+=(nftables)
has chromium || debian+=(chromium)
has hcloud || debian+=(hcloud-cli)
# Debian's awscli at /usr/bin/aws (a version manager's shim named aws may
# stand for a CLI that is not installed), with its service models.
[ -x /usr/bin/aws ] && [ -f /usr/lib/python3/dist-packages/awscli/botocore/data/ec2/2016-11-15/service-2.json ] || debian+=(awscli)
# Debian's azure-cli at /usr/bin/az (pip's or a version manager's az
# first on PATH may be another), with the Python SDK it runs on.
[ -x /usr/bin/az ] || debian+=(azure-cli)
# PySocks under Debian's own python3 (a version manager's python3 first
# on PATH would not see it), which the test runs.
[ -f /usr/lib/python3/dist-packages/socks.py ] || debian+=(python3-socks)
sdk_root() {
  local g
  g=$(command -v gcloud) || return 1
  dirname "$(dirname "$(readlink -f "$g")")"
}
root=$(sdk_root || true)
[ -n "$root" ] && [ -x "$root/platform/cloud-firestore-emulator/cloud_firestore_emulator" ] || google+=(google-cloud-cli-firestore-emulator)
[ -n "$root" ] && [ -x "$root/platform/pubsub-emulator/bin/cloud-pubsub-emulator" ] || google+=(google-cloud-cli-pubsub-emulator)

if [ ${#debian[@]} -eq 0 ] && [ ${#google[@]} -eq 0 ]; then
  exit 0
fi
if ! has apt-get; then
  echo "install-deps: ${debian[*]} ${google[*]} missing; this script installs them with apt on Debian 12 or 13 only (docs/getting-started/local.md says what else to install, and how, elsewhere)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  # One command to run, which installs all of it (apt-get update first).
  echo "install-deps: ${debian[*]} ${google[*]} missing, and installing needs root. Run: sudo $0" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#debian[@]} -gt 0 ]; then
  echo "install-deps: installing ${debian[*]} from Debian's repository"
  if ! apt-get install -y -qq "${debian[@]}"; then
    echo "install-deps: apt-get could not install ${debian[*]}, which Debian's own repository holds: see apt-get's lines above" >&2
    exit 1
  fi
fi
[ ${#google[@]} -gt 0 ] || exit 0

# A configured source that holds the emulators has them as a candidate.
candidate() { apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; }
if ! candidate "${google[0]}"; then
  # What fetching and adding Google's key takes, from Debian.
  if ! { has curl && has gpg && [ -f /etc/ssl/certs/ca-certificates.crt ]; }; then
    apt-get install -y -qq curl gpg ca-certificates
  fi
  key=$(mktemp)
  trap 'rm -f "$key"' EXIT
  if ! curl -fsSL --max-time 20 -o "$key" "$google_key_url" 2>/dev/null; then
    echo "install-deps: ${google[*]} come from Google's Cloud CLI apt source, which no configured source has and $google_key_url cannot be reached from here; add the source with: $add_google" >&2
    exit 1
  fi
  echo "install-deps: adding Google's Cloud CLI apt source ($google_list)"
  gpg --dearmor --yes -o "$google_keyring" "$key"
  echo "$google_source" >"$google_list"
  apt-get update -qq
fi
echo "install-deps: installing ${google[*]} from Google's Cloud CLI apt source"
if ! apt-get install -y -qq "${google[@]}"; then
  echo "install-deps: apt-get could not install ${google[*]} from Google's Cloud CLI apt source: see apt-get's lines above" >&2
  exit 1
fi
