#!/usr/bin/env bash
# Offline test of deploy.sh: stub `az`, `terraform`, `go` and `sleep` on PATH,
# run deploy/destroy, and check what they called, in which order, and what they
# print. Nothing here talks to Azure. Run by `make test-infra`.
#
# Hermetic: deploy.sh runs with an empty environment (env -i) and a PATH of
# the stubs plus a sandbox holding only the few system tools it needs, so an
# Azure CLI, Terraform or Docker installed on this machine (or an az login, or
# ARM_* variables in the caller's shell) cannot change the outcome.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deploy="$here/deploy.sh"
work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
stubs="$work/bin"
sandbox="$work/sys"
mkdir -p "$stubs" "$sandbox" "$work/layout" "$work/home"
# The system tools deploy.sh and the stubs use, linked from wherever this
# machine has them; nothing else of /usr/bin is visible.
for tool in bash env cat dirname basename date sed tr grep cut wc tail mkdir rm base64 tee; do
	found=$(command -v "$tool") || { echo "deploy_test: this machine has no $tool"; exit 1; }
	ln -s "$found" "$sandbox/$tool"
done
echo '{}' >"$work/layout/index.json"
calls="$work/calls.log"
digest="sha256:$(printf '%064d' 7)"
fails=0 passes=0

fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }
pass() { passes=$((passes + 1)); }
expect_contains() { # file text what
	if grep -qF -- "$2" "$1"; then pass; else fail "$3: $(basename "$1") lacks: $2"; fi
}
expect_absent() {
	if grep -qF -- "$2" "$1"; then fail "$3: $(basename "$1") contains: $2"; else pass; fi
}

# --- stubs -------------------------------------------------------------------
cat >"$stubs/az" <<'EOF'
#!/usr/bin/env bash
echo "az $*" >>"$CALLS"
case "$*" in
"account show --only-show-errors -o none") [[ -z ${AZ_LOGGED_OUT:-} ]] ;;
"account show --query id -o tsv") echo "$ARM_SUBSCRIPTION_ID" ;;
"account show --query user.type -o tsv") echo "${AZ_USER_TYPE:-user}" ;;
"account show --query user.name -o tsv") echo 44444444-4444-4444-4444-444444444444 ;;
ad\ sp\ show*)
	echo "ERROR: Insufficient privileges to complete the operation." >&2; exit 1 ;;
"account get-access-token --query accessToken -o tsv")
	[[ -z ${AZ_TOKEN_WITHOUT_OID:-} ]] || { echo "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJhcm0ifQ.c2ln"; exit 0; }
	# {"aud":"arm","oid":"55555555-5555-5555-5555-555555555555"}, base64url without padding
	echo "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJhcm0iLCJvaWQiOiI1NTU1NTU1NS01NTU1LTU1NTUtNTU1NS01NTU1NTU1NTU1NTUifQ.c2ln" ;;
"ad signed-in-user show --query id -o tsv") echo 33333333-3333-3333-3333-333333333333 ;;
acr\ login*) echo "token-from-acr" ;;
# The subscription's Container Instances features, as `az feature list -o tsv`
# prints them (name<TAB>state). Microsoft does not name the diagnostic
# settings' preview feature; AZ_FEATURES holds a stand-in of that shape.
"feature list --namespace Microsoft.ContainerInstance --query [].[name, properties.state] -o tsv --only-show-errors")
	[[ -z ${AZ_FEATURES_FAIL:-} ]] || { echo "ERROR: AuthorizationFailed" >&2; exit 1; }
	printf '%b' "${AZ_FEATURES:-}" ;;
storage\ blob\ show*)
	n=$(($(cat "$STATE/polls" 2>/dev/null || echo 0) + 1)); echo "$n" >"$STATE/polls"
	if ((n < 3)); then printf 'available\tNone\tNone\n'; else printf 'leased\tci-blobleader-worker-02\t1\n'; fi ;;
*) echo "unexpected az call: $*" >&2; exit 9 ;;
esac
EOF
cat >"$stubs/terraform" <<'EOF'
#!/usr/bin/env bash
shift # -chdir=…
echo "terraform $*" >>"$CALLS"
case "$1" in
init) ;;
state) [[ -z ${ACR_IN_STATE:-} ]] || printf '%s\n' azurerm_resource_group.this azurerm_role_assignment.worker_acr_pull ;;
apply)
	if [[ -n ${STAGE1_FAILS:-} && "$*" != *"image_digest=sha256:"* ]]; then echo "Error: creating Container Registry: Conflict" >&2; exit 1; fi
	if [[ "$*" == *"image_digest=sha256:"* ]]; then
		n=$(($(cat "$STATE/stage3" 2>/dev/null || echo 0) + 1)); echo "$n" >"$STATE/stage3"
		if ((n <= ${STAGE3_FAILURES:-0})); then echo "${STAGE3_ERROR:-Error: InaccessibleImage}" >&2; exit 1; fi
	fi ;;
destroy) ;;
output)
	case "${2:-}:${3:-}" in
	-raw:image_digest) [[ -f $STATE/stage3 ]] || exit 1; echo "$DIGEST" ;;
	-raw:registry_name) echo crblobleadertest ;;
	-raw:registry_login_server) echo crblobleadertest.azurecr.io ;;
	-raw:image_repository) echo crblobleadertest.azurecr.io/blobleader/worker ;;
	-raw:storage_account_name) echo stblobleadertest ;;
	-raw:lease_blob_name) echo leader ;;
	-raw:resource_group_name) echo rg-blobleader ;;
	-json:container_names) echo '{"history":"history","leases":"leases"}' ;;
	:) echo 'resource_group_name = "rg-blobleader"' ;;
	*) echo "unexpected output: $*" >&2; exit 9 ;;
	esac ;;
*) echo "unexpected terraform call: $*" >&2; exit 9 ;;
esac
EOF
cat >"$stubs/go" <<'EOF'
#!/usr/bin/env bash
echo "go $* token=${BLOBLEADER_REGISTRY_TOKEN:-<unset>}" >>"$CALLS"
[[ $1 == -C && $2 == */infra/image && $3 == run && $4 == . && $5 == push ]] || { echo "unexpected go call: $*" >&2; exit 9; }
while (($#)); do [[ $1 == --repository ]] && repo=$2; shift; done
echo "push: progress on stderr" >&2
echo "$repo@$DIGEST"
EOF
# sleep records the seconds asked for and returns at once.
cat >"$stubs/sleep" <<'EOF'
#!/usr/bin/env bash
echo "$1" >>"$STATE/sleeps"
EOF
chmod +x "$stubs"/*

run() { # name, then env assignments and deploy.sh arguments; output in $work/<name>.out
	local name=$1
	shift
	rm -f "$calls" "$work"/polls "$work"/stage3 "$work"/sleeps
	set +e
	env -i PATH="$stubs:$sandbox" HOME="$work/home" CALLS="$calls" STATE="$work" DIGEST="$digest" \
		IMAGE_LAYOUT="$work/layout" LEADER_POLL=0 TERRAFORM=terraform GO=go STAGE3_LOG="$work/stage3.log" \
		"$@" >"$work/$name.out" 2>&1
	echo $? >"$work/$name.rc"
	set -e
	touch "$calls"
}

# 1. Full deploy: preflight, stage 1 without digest, push with the token in the
#    environment only, stage 2 with the pushed digest, outputs, leader found.
run deploy ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 bash "$deploy" deploy
[[ $(cat "$work/deploy.rc") == 0 ]] && pass || fail "deploy exited $(cat "$work/deploy.rc"): $(tail -n 5 "$work/deploy.out")"
order=$(grep -nE 'terraform apply|go -C|acr login' "$calls" | cut -d: -f2- | sed -E 's/ -var .*image_digest=/ image_digest=/; s/(terraform apply).* (image_digest=[^ ]*).*/\1 \2/; s/(az acr login).*/\1/; s/go -C [^ ]*(infra.image) run . (push).*(token=.*)/go \1 \2 \3/')
want=$(printf '%s\n' "terraform apply image_digest=" "az acr login" "go infra/image push token=token-from-acr" "terraform apply image_digest=$digest")
[[ $order == "$want" ]] && pass || fail "deploy order:
$order
want:
$want"
expect_contains "$calls" '-var location=eastus -var worker_count=3' "variables"
expect_contains "$calls" 'operator_principal_ids=["33333333-3333-3333-3333-333333333333"]' "operator read access"
expect_absent "$calls" "terraform apply -input=false -auto-approve -var location=eastus -var worker_count=3 token-from-acr" "token kept out of terraform"
if grep '^terraform' "$calls" | grep -q token-from-acr; then fail "the registry token reached a terraform command line"; else pass; fi
expect_contains "$work/deploy.out" "leader: ci-blobleader-worker-02 (term 1)" "leader reported"
expect_contains "$work/deploy.out" "stage 3/3" "progress printed"

# 1b. A service principal that cannot read Microsoft Graph (the usual CI
#     identity): its object id comes from the oid claim of its ARM token, so
#     it still gets read access to the lease and the leader wait runs.
run spnograph ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_USER_TYPE=servicePrincipal bash "$deploy" deploy
[[ $(cat "$work/spnograph.rc") == 0 ]] && pass || fail "deploy as a service principal without Graph exited $(cat "$work/spnograph.rc"): $(tail -n 5 "$work/spnograph.out")"
expect_contains "$calls" 'operator_principal_ids=["55555555-5555-5555-5555-555555555555"]' "service principal without Graph: operator from the token's oid"
expect_contains "$work/spnograph.out" "leader: ci-blobleader-worker-02 (term 1)" "service principal without Graph: leader wait ran"

# 1c. No object id at all (no Graph, a token without oid): refuse before
#     anything is created, naming OPERATOR_OBJECT_ID; =none deploys without.
run nooid ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_USER_TYPE=servicePrincipal AZ_TOKEN_WITHOUT_OID=1 bash "$deploy" deploy
[[ $(cat "$work/nooid.rc") == 1 ]] && pass || fail "deploy without any operator object id exited $(cat "$work/nooid.rc"), want 1"
expect_contains "$work/nooid.out" "OPERATOR_OBJECT_ID" "no object id: names OPERATOR_OBJECT_ID"
if grep -q '^terraform apply' "$calls"; then fail "no object id: terraform apply ran anyway"; else pass; fi
run nooidnone ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_USER_TYPE=servicePrincipal AZ_TOKEN_WITHOUT_OID=1 OPERATOR_OBJECT_ID=none bash "$deploy" deploy
[[ $(cat "$work/nooidnone.rc") == 0 ]] && pass || fail "deploy with OPERATOR_OBJECT_ID=none exited $(cat "$work/nooidnone.rc")"
expect_contains "$work/nooidnone.out" "not waiting for a leader" "OPERATOR_OBJECT_ID=none: says the leader wait is skipped"
expect_absent "$calls" "operator_principal_ids" "OPERATOR_OBJECT_ID=none: no operator"

# 2. Stage 3 is retried while role assignments propagate.
run retry ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 STAGE3_FAILURES=2 TF_VARS='-var zones=[] -var registry_sku=Basic' bash "$deploy" deploy
[[ $(cat "$work/retry.rc") == 0 ]] && pass || fail "deploy with 2 failing stage-3 applies exited $(cat "$work/retry.rc")"
[[ $(grep -c "image_digest=$digest" "$calls") == 3 ]] && pass || fail "want 3 stage-3 applies, got $(grep -c "image_digest=$digest" "$calls")"
[[ $(grep -c -- "-var zones=\[\] -var registry_sku=Basic" "$calls") == 4 ]] && pass || fail "TF_VARS must reach every apply (1 + 3): $(grep -c -- "zones=" "$calls")"

# 3. Fail fast, one line naming what is missing, nothing called on Azure or Terraform.
run nosub bash "$deploy" deploy
[[ $(cat "$work/nosub.rc") == 1 ]] && pass || fail "deploy without ARM_SUBSCRIPTION_ID exited $(cat "$work/nosub.rc")"
expect_contains "$work/nosub.out" "missing: ARM_SUBSCRIPTION_ID" "missing subscription named"
[[ $(wc -l <"$work/nosub.out") == 1 ]] && pass || fail "fail-fast output is not one line: $(cat "$work/nosub.out")"
if grep -qE '^(terraform|go)|acr|storage' "$calls"; then fail "deploy without ARM_SUBSCRIPTION_ID called: $(cat "$calls")"; else pass; fi

run loggedout ARM_SUBSCRIPTION_ID=x AZ_LOGGED_OUT=1 bash "$deploy" deploy
expect_contains "$work/loggedout.out" "missing: Azure credentials (run: az login)" "missing login named"
[[ $(cat "$work/loggedout.rc") == 1 ]] && pass || fail "deploy logged out exited $(cat "$work/loggedout.rc")"

# 4. Stage 3 keeps retrying for as long as role assignments are documented to
#    take to propagate (about 10 minutes, docs/security.md), then gives up
#    with one message naming the window.
run window ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 STAGE3_FAILURES=1000 bash "$deploy" deploy
[[ $(cat "$work/window.rc") == 1 ]] && pass || fail "deploy whose stage 3 never succeeds exited $(cat "$work/window.rc")"
waited=0
while read -r s; do waited=$((waited + s)); done < <(cat "$work/sleeps" 2>/dev/null)
((waited >= 600)) && pass || fail "stage 3 retried for only ${waited}s before giving up; role propagation takes up to 10 min"
expect_contains "$work/window.out" "stage 3 kept failing for ${waited}s" "the give-up message names the window"

# 4b. A stage-3 failure that waiting does not cure stops at once, naming its
#     cause, instead of being retried for the propagation window and blamed
#     on role propagation: the groups' diagnostic settings refused (told by
#     the resource Terraform names, `with <address>`; the ARM wording here is
#     a stand-in), an unregistered provider, a refused image pull when the
#     AcrPull assignment is from an earlier deploy, anything unrecognised.
#     Each says what stays behind and names make destroy.
for c in "diagsetting||Error: creating Monitor Diagnostics Setting: unexpected status 400 (stand-in)\n\n  with azurerm_monitor_diagnostic_setting.groups[\"01\"],|Azure refused the container groups' diagnostic settings" \
	"unregistered||Error: MissingSubscriptionRegistration: The subscription is not registered to use namespace 'Microsoft.Insights'|MissingSubscriptionRegistration" \
	"oldpull|1|Error: InaccessibleImage: The image 'crblobleadertest.azurecr.io/blobleader/worker@$digest' in container group is not accessible|not propagating: check that the image is in the registry (az acr repository show -n crblobleadertest --image blobleader/worker@$digest)" \
	"other||Error: Conflict: something else entirely|not a role-propagation error"; do
	IFS='|' read -r name instate err want <<<"$c"
	run "$name" ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 STAGE3_FAILURES=1000 STAGE3_ERROR="$(printf '%b' "$err")" ACR_IN_STATE="$instate" bash "$deploy" deploy
	[[ $(cat "$work/$name.rc") == 1 ]] && pass || fail "$name: deploy exited $(cat "$work/$name.rc"), want 1"
	[[ $(grep -c "image_digest=$digest" "$calls") == 1 ]] && pass || fail "$name: stage 3 applied $(grep -c "image_digest=$digest" "$calls") times, want 1 (no retry)"
	[[ ! -s $work/sleeps ]] && pass || fail "$name: slept before giving up: $(cat "$work/sleeps")"
	expect_contains "$work/$name.out" "stage 3 failed: " "$name: names the failure"
	expect_contains "$work/$name.out" "$want" "$name: names the cause"
	expect_absent "$work/$name.out" "retrying in" "$name: no propagation retry"
	expect_contains "$work/$name.out" "stays and is billed" "$name: says what stays behind"
	expect_contains "$work/$name.out" "make destroy to remove it all" "$name: names make destroy"
done

# 4c. A refused image pull right after this deploy created the AcrPull
#     assignment is its propagation: retried.
run newpull ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 STAGE3_FAILURES=1 bash "$deploy" deploy
[[ $(cat "$work/newpull.rc") == 0 ]] && pass || fail "newpull: deploy exited $(cat "$work/newpull.rc")"
expect_contains "$work/newpull.out" "created by this deploy, still propagating; retrying in" "newpull: retried as propagation"

# 4d. Stage 1 itself failing (something may have been created) names make
#     destroy; a failure before anything was created does not.
run stage1 ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 STAGE1_FAILS=1 bash "$deploy" deploy
[[ $(cat "$work/stage1.rc") == 1 ]] && pass || fail "stage1: deploy exited $(cat "$work/stage1.rc")"
expect_contains "$work/stage1.out" "stage 1 failed (terraform's error above); what the deploy created so far stays and is billed" "stage1: says what stays"
expect_contains "$work/stage1.out" "make destroy" "stage1: names make destroy"
if grep -q '^go ' "$calls"; then fail "stage1: pushed after a failed stage 1"; else pass; fi

# 4e. The diagnostic settings' preview: a Container Instances feature about
#     diagnostics that the subscription has not registered stops the deploy
#     before anything is created, naming the feature as Azure lists it, the
#     commands that enable it, and the legacy route; registered, absent, or
#     the legacy route chosen: the deploy goes on.
run preview ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_FEATURES='Microsoft.ContainerInstance/OtherFeature\tNotRegistered\nMicrosoft.ContainerInstance/ExampleDiagnosticSettings\tNotRegistered\n' bash "$deploy" deploy
[[ $(cat "$work/preview.rc") == 1 ]] && pass || fail "preview: deploy exited $(cat "$work/preview.rc"), want 1"
expect_contains "$work/preview.out" "cannot deploy, nothing was changed" "preview: nothing changed"
expect_contains "$work/preview.out" "az feature register --namespace Microsoft.ContainerInstance --name ExampleDiagnosticSettings" "preview: the command that enables it"
expect_contains "$work/preview.out" "TF_VAR_log_route=legacy make deploy" "preview: the route without it"
expect_absent "$work/preview.out" "OtherFeature" "preview: only features about diagnostics"
expect_absent "$work/preview.out" "make destroy" "preview: nothing to destroy"
if grep -q '^terraform apply' "$calls"; then fail "preview: terraform apply ran anyway"; else pass; fi
[[ $(wc -l <"$work/preview.out") == 1 ]] && pass || fail "preview: not one line: $(cat "$work/preview.out")"
run previewon ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_FEATURES='Microsoft.ContainerInstance/ExampleDiagnosticSettings\tRegistered\n' bash "$deploy" deploy
[[ $(cat "$work/previewon.rc") == 0 ]] && pass || fail "previewon: deploy with the feature registered exited $(cat "$work/previewon.rc")"
run previewlegacy ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 TF_VAR_log_route=legacy AZ_FEATURES='Microsoft.ContainerInstance/ExampleDiagnosticSettings\tNotRegistered\n' bash "$deploy" deploy
[[ $(cat "$work/previewlegacy.rc") == 0 ]] && pass || fail "previewlegacy: the legacy route exited $(cat "$work/previewlegacy.rc")"
expect_absent "$calls" "feature list" "previewlegacy: no preview check for the legacy route"
run previewunknown ARM_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000001 AZ_FEATURES_FAIL=1 bash "$deploy" deploy
[[ $(cat "$work/previewunknown.rc") == 0 ]] && pass || fail "previewunknown: deploy exited $(cat "$work/previewunknown.rc")"
expect_contains "$work/previewunknown.out" "make verify-azure checks the diagnostic settings" "previewunknown: says who checks"

# 5. A bash older than 4.4 (stock macOS has 3.2) is refused up front, in one
#    line saying what to install.
(
	set +eu
	source "$deploy" >/dev/null 2>&1 # defines the functions; runs nothing when sourced
	require_bash 3 2
) >"$work/oldbash.out" 2>&1 && rc=0 || rc=$?
[[ $rc == 2 ]] && pass || fail "bash 3.2 was not refused with exit 2 (exit $rc: $(cat "$work/oldbash.out"))"
expect_contains "$work/oldbash.out" "brew install bash" "old bash: says what to install"
[[ $(wc -l <"$work/oldbash.out") == 1 ]] && pass || fail "old bash: not one line: $(cat "$work/oldbash.out")"
(
	set +eu
	source "$deploy" >/dev/null 2>&1
	require_bash 4 4 && require_bash 5 2
) && pass || fail "bash 4.4 and 5.2 must be accepted"

# 6. No az at all (the stub removed; the sandbox has none, whatever this
#    machine has installed): destroy names it and the missing subscription.
rm "$stubs/az"
run noaz bash "$deploy" destroy
expect_contains "$work/noaz.out" "destroy: cannot destroy, nothing was changed; missing: az (Azure CLI on PATH); ARM_SUBSCRIPTION_ID" "destroy names both"
[[ $(cat "$work/noaz.rc") == 1 ]] && pass || fail "destroy without az exited $(cat "$work/noaz.rc")"

printf '%d passed, %d failed\n' "$passes" "$fails"
((fails == 0))
