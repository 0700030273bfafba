#!/usr/bin/env bash
# `make destroy` in a new shell: deploy.sh destroy's own variables, and no
# TF_VAR_* at all, must pass variable validation (a destroy plans the
# configuration first). Plans with the mocked provider (terraform test,
# tests/rehearsal) in DIR, an initialised copy of infra/ (make test-infra's
# TF_CHECK_DIR). A negative control shows the check can fail: without the
# destroy's alerts argument the same plan is refused.
#
#   destroy-plan_test.sh DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: destroy-plan_test.sh DIR}
TERRAFORM=${TERRAFORM:-terraform}
fails=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

# deploy.sh's functions, with its defaults (AZURE_LOCATION, WORKER_COUNT).
# shellcheck source=deploy.sh
source "$here/deploy.sh"

# plan NAME ARGS...: the rehearsal plan in an empty environment.
plan() {
	local name=$1
	shift
	env -i PATH="$PATH" HOME="$HOME" ${TF_CLI_CONFIG_FILE:+TF_CLI_CONFIG_FILE="$TF_CLI_CONFIG_FILE"} \
		TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1 \
		"$TERRAFORM" -chdir="$dir" test -no-color -test-directory=tests/rehearsal "$@" >"$dir/destroy-plan-$name.log" 2>&1
}

digest="sha256:$(printf '%064d' 7)"
for d in "" "$digest"; do
	mapfile -t args < <(destroy_args "$d")
	label="destroy with image_digest=${d:-<none>}"
	if plan "${d:+stage2}${d:-stage1}" "${args[@]}"; then
		echo "ok   $label: variables valid with no TF_VAR_*"
	else
		fail "$label: the plan is refused in an environment with no TF_VAR_*:"
		sed 's/^/    /' "$dir/destroy-plan-${d:+stage2}${d:-stage1}.log" | grep -v '^\s*$' | head -n 12
	fi
done

# Negative control: the location and digest alone (what destroy passed
# before) must be refused, naming var.alerts.
mapfile -t args < <(common_vars)
if plan control "${args[@]}" -var "image_digest=$digest"; then
	fail "negative control: a destroy plan without alerts={ enabled = false } passed; the check cannot fail"
elif grep -q 'var.alerts' "$dir/destroy-plan-control.log"; then
	echo "ok   negative control: without it the plan is refused on var.alerts"
else
	fail "negative control refused for another reason: $(grep -m1 -i error "$dir/destroy-plan-control.log")"
fi
((fails == 0))
