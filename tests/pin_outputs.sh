#!/usr/bin/env bash
# pin_outputs.sh NPUSIM [--update] - the exact output of a fixed list of runs
# (tests/golden/outputs.list: every shipped workload, the sample traces, coll
# cases on every system, op tables) must keep the sha256 in
# tests/golden/outputs.sha256: a change meant to move no number (a refactor)
# is checked byte for byte. --update rewrites the hashes; a commit that does so
# says why. Run from the repository root.
set -u
npusim=$1
list=tests/golden/outputs.list
want=tests/golden/outputs.sha256
got=$(mktemp)
trap 'rm -f "$got"' EXIT
fail=0
while read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  # shellcheck disable=SC2086
  sum=$("$npusim" $line 2>/dev/null | sha256sum | cut -c1-64)
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "FAIL (exit $rc): npusim $line"; fail=1; }
  echo "$sum  $line" >>"$got"
done <"$list"
if [ "${2:-}" = --update ]; then
  cp "$got" "$want"
  echo "pin_outputs: wrote $want ($(wc -l <"$want") runs)"
  exit $fail
fi
if diff "$want" "$got" >/dev/null && [ $fail -eq 0 ]; then
  echo "pin_outputs: $(wc -l <"$want") runs, every output byte-identical"
else
  diff "$want" "$got" | sed -n 's/^> [0-9a-f]*  /moved: npusim /p'
  echo "pin_outputs: outputs moved (above); if intended, run tests/pin_outputs.sh $npusim --update and say why in the commit"
  exit 1
fi
