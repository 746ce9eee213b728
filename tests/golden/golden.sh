#!/usr/bin/env bash
# golden.sh NPUSIM [--update] - the predicted cost of a fixed list of
# transformer ops (tests/golden/ops.list) must stay what tests/golden/ops.csv
# says, so a model change that moves them is seen and explained in its commit.
# --update rewrites ops.csv. Run from the repository root.
set -u
npusim=$1
list=tests/golden/ops.list
want=tests/golden/ops.csv
got=$(mktemp)
trap 'rm -f "$got"' EXIT
echo "system,op,shape,dtype,time_s,cycles,tflops,hbm_GBps,peak_fraction,bound,tile,tiles,waves,cores" >"$got"
while read -r system op shape dtype flags; do
  case "$system" in '' | '#'*) continue ;; esac
  # shellcheck disable=SC2086
  row=$("$npusim" op --system "configs/systems/$system.json" --op "$op" --shape "$shape" \
    --dtype "$dtype" $flags --format csv | tail -1) || { echo "FAIL: $system $op $shape"; exit 1; }
  echo "$system,${row#*,}" | sed "s/^$system,/$system,$op,/" >>"$got"
done <"$list"
if [ "${2:-}" = --update ]; then
  cp "$got" "$want"
  echo "golden: wrote $want ($(($(wc -l <"$want") - 1)) ops)"
  exit 0
fi
if diff -u "$want" "$got"; then
  echo "golden: $(($(wc -l <"$want") - 1)) passed, 0 failed"
else
  echo "golden: predictions moved (above); if intended, run tests/golden/golden.sh $npusim --update and explain it in the commit"
  exit 1
fi
