#!/usr/bin/env bash
# Debian packages some tests use: headless Chromium (the HTML report is checked in a real
# browser) and systemd (generated units are checked by systemd-analyze verify). Without
# root or apt-get the tests that need them skip, and this script says so.
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${need[*]} not installed (needs root and apt-get); the browser/systemd tests will skip"
  exit 0
fi
echo "installing ${need[*]} (Debian packages) for the report and deployment tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
  || echo "note: apt-get could not install ${need[*]}; the browser/systemd tests will skip"
exit 0
