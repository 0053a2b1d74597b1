#!/usr/bin/env bash
# Installs what `make test` needs beyond Go: Google's Firestore and Pub/Sub
# emulators (with Java 17) and so the Cloud CLI, gcloud, which a test also
# drives against the Compute fake; shellcheck, which checks the rendered
# startup script; for `make image-test`, which boots that script on a
# Debian 13 and a Debian 12 in a container, debootstrap, systemd-container
# (systemd-nspawn) and iproute2 (network namespaces); tinyproxy, which
# `IMAGE_BENCH_ENGINE=tinyproxy make image-bench` measures beside the
# project's engine; Debian's Chromium, which the web console's browser
# test drives headless (dev/localstack, through the Go module chromedp);
# Hetzner's own CLI (Debian's hcloud-cli), which a test drives against
# the Hetzner fake; and AWS's own CLI (Debian's awscli), which a test
# drives against the EC2 fake, and whose botocore data holds the EC2 and
# STS service models the fake is checked against. It installs only what is missing, so it is cheap to run
# every time: make test, run, image-test and bench run it first. Without
# root it stops with the one command that installs the rest.
set -euo pipefail

missing=()
sdk_root() {
  local g
  g=$(command -v gcloud) || return 1
  dirname "$(dirname "$(readlink -f "$g")")"
}
root=$(sdk_root || true)
[ -n "$root" ] && [ -x "$root/platform/cloud-firestore-emulator/cloud_firestore_emulator" ] || missing+=(google-cloud-cli-firestore-emulator)
[ -n "$root" ] && [ -x "$root/platform/pubsub-emulator/bin/cloud-pubsub-emulator" ] || missing+=(google-cloud-cli-pubsub-emulator)
command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
command -v tinyproxy >/dev/null || [ -x /usr/bin/tinyproxy ] || missing+=(tinyproxy)
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
command -v ip >/dev/null || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
command -v chromium >/dev/null || missing+=(chromium)
command -v hcloud >/dev/null || missing+=(hcloud-cli)
# Debian's awscli at /usr/bin/aws (a version manager's shim named aws may
# stand for a CLI that is not installed), with its service models.
[ -x /usr/bin/aws ] && [ -f /usr/lib/python3/dist-packages/awscli/botocore/data/ec2/2016-11-15/service-2.json ] || missing+=(awscli)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  # One command to run, which installs all of it (apt-get update first).
  echo "install-deps: ${missing[*]} missing, and installing needs root. Run:" >&2
  echo "  sudo $0" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
apt-get update -qq
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; then
  echo "install-deps: apt-get could not install ${missing[*]}." >&2
  echo "  tinyproxy, shellcheck, debootstrap, systemd-container, iproute2, chromium, hcloud-cli and awscli come from Debian's own repository." >&2
  echo "  The emulators come from Google's Cloud CLI apt repository," >&2
  echo "  or: gcloud components install cloud-firestore-emulator pubsub-emulator" >&2
  exit 1
fi
