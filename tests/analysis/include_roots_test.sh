#!/bin/sh
# The analysis libraries' include roots (analysis/CMakeLists.txt) make a wrong-direction include a
# compile error: each library compiles a header it may use and fails on one it may not.
# Usage: include_roots_test.sh <c++ compiler> <build dir>
set -u
roots=$(cd "$2" && pwd)/analysis/include_roots
cd "$(mktemp -d)" || exit 1  # stdin's quoted includes search the current folder first
cxx=$1
# library: the include roots it sees (itself and what it links)
flags() {
  case $1 in
    base) echo "-I$roots/base" ;;
    model) echo "-I$roots/model -I$roots/base" ;;
    load) echo "-I$roots/load -I$roots/model -I$roots/base" ;;
    causal) echo "-I$roots/causal -I$roots/model -I$roots/base" ;;
    rules) echo "-I$roots/rules -I$roots/causal -I$roots/model -I$roots/base" ;;
  esac
}
compiles() {  # library header
  printf '#include "%s"\n' "$2" | "$cxx" -std=c++17 -fsyntax-only $(flags "$1") -x c++ - 2>/dev/null
}
fail=0
check() {  # library header expected(yes|no)
  if compiles "$1" "$2"; then got=yes; else got=no; fi
  if [ "$got" != "$3" ]; then
    echo "FAIL: analysis/$1 including $2: compiles=$got, expected $3"
    fail=1
  fi
}
check base analysis/base/status.h yes
check base analysis/model/trace.h no
check model analysis/model/trace.h yes
check model analysis/load/trace_loader.h no
check model analysis/causal/causal_graph.h no
check load analysis/load/trace_loader.h yes
check load analysis/causal/causal_graph.h no
check causal analysis/causal/what_if.h yes
check causal analysis/rules/rules.h no
check causal analysis/load/trace_loader.h no
check rules analysis/rules/rule_registry.h yes
check rules analysis/load/trace_loader.h no
[ $fail = 0 ] && echo "include roots: 12 checks passed"
exit $fail
