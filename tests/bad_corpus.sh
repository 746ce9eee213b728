#!/usr/bin/env bash
# bad_corpus.sh NPUSIM - runs every malformed input in tests/data/bad/ through
# the binary and checks the outcome: exit status 2, nothing on stdout, and
# exactly the expected one line on stderr.
#
# A case is NAME.err (the expected stderr line) with either NAME.args (the
# arguments, split on spaces) or NAME.json (run as validate --system NAME.json).
# Run from the repository root.
set -u
npusim=$1
dir=tests/data/bad
pass=0
fail=0
for expect_file in "$dir"/*.err; do
  name=$(basename "$expect_file" .err)
  if [ -f "$dir/$name.args" ]; then
    read -r -a args < "$dir/$name.args"
  else
    args=(validate --system "$dir/$name.json")
  fi
  expected=$(cat "$expect_file")
  out=$("$npusim" "${args[@]}" 2>/tmp/npusim-bad-$$.err)
  rc=$?
  err=$(cat /tmp/npusim-bad-$$.err)
  lines=$(wc -l < /tmp/npusim-bad-$$.err)
  if [ "$rc" -eq 2 ] && [ -z "$out" ] && [ "$err" = "$expected" ] && [ "$lines" -eq 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $rc (want 2), stdout ${#out} bytes (want 0), stderr lines $lines"
    echo "  expected: $expected"
    echo "  got:      $err"
  fi
done
rm -f /tmp/npusim-bad-$$.err
echo "bad corpus: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
