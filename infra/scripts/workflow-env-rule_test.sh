#!/usr/bin/env bash
# Test of workflow-env-rule.sh: it finds every expression spliced into a run
# script of a fixture (inline, block and folded scalars) and nothing else (an
# expression in env:, if: or with: is a value, not code); and the
# repository's own workflows pass it. Run by `make test-infra`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check="$here/workflow-env-rule.sh"
fails=0

out=$(bash "$check" "$here/testdata/workflow-spliced.yml") && rc=0 || rc=$?
lines=$(printf '%s\n' "$out" | sed -n 's/^[^:]*:\([0-9]*\):.*/\1/p' | tr '\n' ' ')
if [[ $rc != 1 || $lines != "14 19 21 " ]]; then
	echo "FAIL: fixture: want exit 1 and lines 14 19 21, got exit $rc and lines '$lines':"
	printf '%s\n' "$out"
	fails=$((fails + 1))
fi
if ! out=$(bash "$check" "$here"/../../.github/workflows/*.yml); then
	echo "FAIL: .github/workflows splice expressions into run scripts (pass them through env:):"
	printf '%s\n' "$out"
	fails=$((fails + 1))
fi
((fails == 0)) && echo "workflow-env-rule: ok"
((fails == 0))
