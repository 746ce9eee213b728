# e2e_lib.sh - what the end-to-end scripts share (sourced, not run): a scratch
# directory $tmp removed on exit, pass/fail counting, `check NAME COMMAND...`,
# `expect_line NAME LINE COMMAND...` and the closing tally.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check NAME COMMAND... : passes if the command succeeds, else shows its output
  local name=$1
  shift
  if "$@" >"$tmp/check.out" 2>&1; then
    ok
  else
    bad "$name"
    sed 's/^/  /' "$tmp/check.out" | head -20
  fi
}
expect_line() { # expect_line NAME LINE COMMAND... : exit 2, nothing on stdout, exactly LINE on stderr
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$lines" -eq 1 ] && [ "$(cat "$tmp/err")" = "$want" ]; then
    ok
  else
    bad "$name: exit $rc (want 2), stdout $(wc -c <"$tmp/out") bytes (want 0), stderr $lines lines (want 1)"
    echo "  expected: $want"
    echo "  got:      $(head -c 400 "$tmp/err")"
  fi
}
finish() { # finish LABEL : prints the tally; fails if any check failed
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
