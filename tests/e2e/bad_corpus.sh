#!/usr/bin/env bash
# bad_corpus.sh NPUSIM - runs every malformed input in tests/corpus/bad/ through
# the binary and checks the outcome with e2e_lib.sh's expect_line: exit status 2,
# nothing on stdout, and exactly the expected one line on stderr.
#
# Cases are grouped by the command they run, one folder each
# (tests/corpus/bad/<command>/; cli/ for the command line itself). A case is
# NAME.err (the expected stderr line) with either NAME.args (the arguments,
# split on spaces) or NAME.json (run as validate --system NAME.json).
# Run from the repository root.
set -u
npusim=$1
. "$(dirname "$0")/e2e_lib.sh"
root=tests/corpus/bad
for expect_file in "$root"/*/*.err; do
  dir=$(dirname "$expect_file")
  name=$(basename "$expect_file" .err)
  if [ -f "$dir/$name.args" ]; then
    read -r -a args <"$dir/$name.args"
  else
    args=(validate --system "$dir/$name.json")
  fi
  expect_line "$name" "$(cat "$expect_file")" "$npusim" "${args[@]}"
done
[ "$pass" -gt 0 ] || bad "no case in $root"
finish "bad corpus"
