#!/usr/bin/env bash
# apt_missing.sh PACKAGE... - installs, with Debian's apt-get, those of the
# named packages that are not installed yet; does nothing when all are. Runs
# apt-get directly as root, else through sudo. Shared by setup.sh (what
# running npusim needs) and test.sh (what the tests add).
# While another apt or dpkg holds the lock (unattended upgrades, a second
# terminal), it waits instead of failing: apt-get is retried every
# APT_LOCK_POLL_S (5) seconds for up to APT_LOCK_WAIT_S (600), with a line on
# stderr; past that, one line says so (exit 1).
set -euo pipefail
wait_s=${APT_LOCK_WAIT_S:-600}
poll_s=${APT_LOCK_POLL_S:-5}

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

# apt-get ARGS as root, retried while the lock is held (apt's messages for
# it: "Could not get lock", "Unable to acquire the dpkg frontend lock").
apt_get() {
  local waited=0 rc log
  log=$(mktemp)
  while :; do
    rc=0
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" 2>"$log" || rc=$?
    if [ "$rc" -eq 0 ] || ! grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock' "$log"; then
      cat "$log" >&2
      rm -f "$log"
      return "$rc"
    fi
    if [ "$waited" -ge "$wait_s" ]; then
      rm -f "$log"
      echo "apt_missing: expected the apt/dpkg lock to be free within ${wait_s} s, found it" \
        "still held (another apt running); run again when it has finished" >&2
      return 1
    fi
    echo "apt_missing: another apt or dpkg holds the lock; waiting (${waited} of ${wait_s} s)" >&2
    sleep "$poll_s"
    waited=$((waited + (poll_s > 0 ? poll_s : 1)))
  done
}

echo "apt_missing: installing ${missing[*]}"
apt_get update -q
apt_get install -y -q --no-install-recommends "${missing[@]}"
