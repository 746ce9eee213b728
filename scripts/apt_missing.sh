#!/usr/bin/env bash
# apt_missing.sh PACKAGE... - installs, with Debian's apt-get, those of the
# named packages that are not installed yet; does nothing when all are. Runs
# apt-get directly as root, else through sudo. Shared by setup.sh (what
# running npusim needs) and test.sh (what the tests add).
set -euo pipefail

missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "apt_missing: expected root or sudo to install ${missing[*]}, found neither" >&2
    exit 1
  fi
  as_root=(sudo)
fi
echo "apt_missing: installing ${missing[*]}"
"${as_root[@]}" apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
