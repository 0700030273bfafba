#!/usr/bin/env bash
# The azure workflow uploads the run's reports only after its teardown step,
# which saves the evidence (container logs, histories) into the reports
# before it deletes anything; uploaded earlier, the artifact lacks it.
#
#   workflow-order_test.sh [WORKFLOW]   (default .github/workflows/azure.yml)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wf=${1:-$here/../../.github/workflows/azure.yml}
teardown=$(grep -n 'run: make test-azure-teardown' "$wf" | tail -n 1 | cut -d: -f1)
upload=$(grep -n 'uses: actions/upload-artifact@' "$wf" | head -n 1 | cut -d: -f1)
[[ -n $teardown && -n $upload ]] || { echo "FAIL: $wf: no teardown step (make test-azure-teardown) or no upload-artifact step"; exit 1; }
if ((upload < teardown)); then
	echo "FAIL: $wf uploads the artifact (line $upload) before the teardown step that saves the evidence (line $teardown)"
	exit 1
fi
echo "ok   $wf uploads the artifact (line $upload) after the teardown (line $teardown)"
