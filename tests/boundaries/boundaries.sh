#!/usr/bin/env bash
# The library boundaries hold: for each library, a file including a header it
# may use compiles, and a file including a header across a forbidden line does
# not ("No such file"), because each library's include path holds only its own
# folder and those of the libraries it links (sim/CMakeLists.txt).
# Usage: boundaries.sh BUILD_DIR LIB:HEADER:ok|no ...  (targets from tests/CMakeLists.txt)
set -u
bin=$1
shift
pass=0 fail=0
for probe in "$@"; do
  IFS=: read -r lib header expect <<<"$probe"
  target="boundary_${expect}_${lib}_${header%.h}"
  out=$(cmake --build "$bin" --target "$target" 2>&1)
  rc=$?
  if [ "$expect" = ok ] && [ $rc -eq 0 ]; then
    pass=$((pass + 1))
  elif [ "$expect" = no ] && [ $rc -ne 0 ] && grep -q "$header: No such file" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: npusim_$lib including $header: expected $([ "$expect" = ok ] && echo it to compile || echo 'a missing-header error'), got exit $rc:"
    tail -5 <<<"$out"
  fi
done
echo "boundaries: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
