#!/usr/bin/env bash
# make deploy / make destroy / the preflight both share.
#
#   deploy.sh preflight   check terraform, az, credentials and ARM_SUBSCRIPTION_ID; change nothing
#   deploy.sh deploy      stage 1 (storage, identity, roles, registry, logs), push the
#                         image from out/image by digest, stage 2 (worker groups),
#                         print the outputs, wait until one worker holds the lease
#   deploy.sh destroy     terraform destroy of everything deploy created
#
# A failure after stage 1 began says so: what was created stays (and is
# billed) until `make deploy` succeeds or `make destroy` removes it.
#
# Environment: AZURE_LOCATION (region), WORKER_COUNT, TERRAFORM, GO,
# OPERATOR_OBJECT_ID (who gets read access to the lease; default: whoever az is signed in as,
# from Graph or else the oid of its ARM token; `none`: nobody, and no leader wait),
# LEADER_TIMEOUT (seconds to wait for a leader, default 600), LEADER_POLL (10 s),
# PROPAGATION_WAIT (seconds stage 3 keeps retrying while role assignments
# propagate, default 900: ARM is documented to take up to about 10 minutes),
# RETRY_BACKOFF (seconds, times the attempt number and at most 180, between
# stage-3 retries; 60), STAGE3_LOG (terraform's stage-3 output, default
# out/deploy-stage3.log), IMAGE_LAYOUT (default out/image),
# TF_VARS (extra arguments for terraform plan/apply, e.g. "-var zones=[]"),
# TF_VAR_log_route (legacy: no diagnostic settings, so no preview check).
# State stays local in infra/terraform.tfstate (git-ignored); keep it to destroy.
#
# Needs bash >= 4.4 (mapfile, empty arrays under `set -u`); an older bash
# (macOS ships 3.2) is refused before anything runs.
set -euo pipefail

# require_bash MAJOR MINOR: refuse, in one line, a bash older than 4.4.
require_bash() {
	if (($1 < 4 || ($1 == 4 && $2 < 4))); then
		printf 'deploy: needs bash >= 4.4, this is %s.%s (macOS ships 3.2); install a newer one (macOS: brew install bash, then open a new shell) and run make again; nothing was changed\n' "$1" "$2" >&2
		exit 2
	fi
}
require_bash "${BASH_VERSINFO[0]}" "${BASH_VERSINFO[1]}"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
infra=$(dirname "$here")
root=$(dirname "$infra")
TERRAFORM=${TERRAFORM:-terraform}
GO=${GO:-go}
AZURE_LOCATION=${AZURE_LOCATION:-eastus}
WORKER_COUNT=${WORKER_COUNT:-3}
LEADER_TIMEOUT=${LEADER_TIMEOUT:-600}
LEADER_POLL=${LEADER_POLL:-10}
RETRY_BACKOFF=${RETRY_BACKOFF:-60}
PROPAGATION_WAIT=${PROPAGATION_WAIT:-900}
layout=${IMAGE_LAYOUT:-$root/out/image}
tf() { "$TERRAFORM" -chdir="$infra" "$@"; }
step() { printf '\n==> %s\n' "$*"; }
# die MESSAGE: one line, exit 1; once stage 1 began (created=1) it says
# what stays behind and how to remove it.
die() {
	local left=
	[[ -z ${created:-} ]] ||
		left="; what the deploy created so far stays and is billed (the Premium container registry alone about \$1.67 a day): run make deploy again once this is fixed, or make destroy to remove it all"
	printf '%s: %s%s\n' "${cmd:-deploy}" "$*" "$left" >&2
	exit 1
}

# One line naming everything that is missing, before anything is created.
preflight() {
	local missing=()
	command -v "$TERRAFORM" >/dev/null 2>&1 || missing+=("terraform (>= 1.11 on PATH)")
	if ! command -v az >/dev/null 2>&1; then
		missing+=("az (Azure CLI on PATH)")
	elif ! az account show --only-show-errors -o none >/dev/null 2>&1; then
		missing+=("Azure credentials (run: az login)")
	fi
	[[ -n ${ARM_SUBSCRIPTION_ID:-} ]] || missing+=("ARM_SUBSCRIPTION_ID (export ARM_SUBSCRIPTION_ID=\$(az account show --query id -o tsv))")
	if ((${#missing[@]})); then
		local joined
		joined=$(printf '%s; ' "${missing[@]}")
		die "cannot ${cmd:-deploy}, nothing was changed; missing: ${joined%; }"
	fi
	[[ ${cmd:-deploy} != deploy ]] || diagnostics_preflight
}

# legacy_route: the deploy sends logs through the groups' legacy
# integration only (var.log_route = "legacy"), so needs no diagnostic setting.
legacy_route() {
	[[ ${TF_VAR_log_route:-} == legacy || ${TF_VARS:-} == *log_route=legacy* ]]
}

# diagnostics_preflight stops the deploy before anything is created when
# the subscription lists a Container Instances feature about diagnostics
# that is not registered. Microsoft documents ACI's diagnostic settings,
# the route the alerts read, as a preview that must be "enabled for a
# subscription" without naming the feature, so the name comes from what
# Azure lists here, never from this script. No such feature listed: nothing
# to enable (make verify-azure checks the route once the groups exist).
diagnostics_preflight() {
	legacy_route && return 0
	local listed name state pending=()
	if ! listed=$(az feature list --namespace Microsoft.ContainerInstance --query '[].[name, properties.state]' -o tsv --only-show-errors 2>/dev/null); then
		echo "note: cannot list the subscription's Microsoft.ContainerInstance features (az feature list); make verify-azure checks the diagnostic settings after the deploy"
		return 0
	fi
	while IFS=$'\t' read -r name state; do
		[[ ${name,,} == *diagnostic* && -n $state && $state != Registered ]] && pending+=("${name#*/} ($state)")
	done <<<"$listed"
	((${#pending[@]} == 0)) && return 0
	local first=${pending[0]%% (*}
	die "cannot deploy, nothing was changed: the container groups' diagnostic settings, the route the alerts read, need the Container Instances feature ${pending[*]}, not registered in this subscription (Microsoft documents them as a preview enabled per subscription). Enable it: az feature register --namespace Microsoft.ContainerInstance --name $first, wait until az feature show --namespace Microsoft.ContainerInstance --name $first says Registered, then az provider register -n Microsoft.ContainerInstance; or deploy without it: TF_VAR_log_route=legacy make deploy (the alerts then read the groups' legacy table ContainerInstanceLog_CL)"
}

# Prints the object id of whoever is signed in to az (user or service
# principal). Microsoft Graph first; a service principal often may not read
# Graph (CI identities), so then the oid claim of its own ARM token, which
# needs no directory permission at all.
signed_in_object_id() {
	local type id
	type=$(az account show --query user.type -o tsv)
	if [[ $type == user ]]; then
		id=$(az ad signed-in-user show --query id -o tsv) || id=
	else
		id=$(az ad sp show --id "$(az account show --query user.name -o tsv)" --query id -o tsv) || id=
	fi
	[[ -n $id ]] || id=$(token_object_id)
	[[ -n $id ]] && printf '%s\n' "$id"
}

# The oid claim of the signed-in principal's ARM access token.
token_object_id() {
	local payload
	payload=$(az account get-access-token --query accessToken -o tsv | cut -d. -f2 | tr '_-' '/+') || return 0
	while ((${#payload} % 4)); do payload+='='; done
	printf '%s' "$payload" | { base64 -d 2>/dev/null || base64 -D 2>/dev/null; } |
		sed -n 's/.*"oid"[[:space:]]*:[[:space:]]*"\([0-9a-fA-F-]*\)".*/\1/p'
}

common_vars() {
	printf '%s\n' -var "location=$AZURE_LOCATION" -var "worker_count=$WORKER_COUNT"
}

deploy() {
	local sub operator digest ref registry login repo
	sub=$(az account show --query id -o tsv)
	[[ $sub == "$ARM_SUBSCRIPTION_ID" ]] ||
		die "az is signed in to subscription $sub but ARM_SUBSCRIPTION_ID is $ARM_SUBSCRIPTION_ID; run: az account set -s $ARM_SUBSCRIPTION_ID"
	[[ -f $layout/index.json ]] || die "no image layout in $layout; run: make image"
	operator=${OPERATOR_OBJECT_ID:-$(signed_in_object_id 2>/dev/null || true)}
	[[ -n $operator ]] ||
		die "cannot find the signed-in principal's object id (Microsoft Graph unreadable and no oid in its ARM token); set OPERATOR_OBJECT_ID=<object id> for read access to the lease and the leader wait, or OPERATOR_OBJECT_ID=none to deploy without both"
	mapfile -t vars < <(common_vars)
	if [[ $operator == none ]]; then
		operator=
		echo "note: OPERATOR_OBJECT_ID=none: deploying without operator read access to the lease, so no leader wait either"
	else
		vars+=(-var "operator_principal_ids=[\"$operator\"]")
	fi
	read -r -a extra <<<"${TF_VARS:-}" # split on blanks, no globbing
	vars+=("${extra[@]}")

	step "terraform init"
	tf init -input=false -upgrade=false >/dev/null

	# Stage 1 keeps the groups of an earlier deploy (their digest) untouched.
	# An AcrPull assignment already in the state is not new: a refused image
	# pull is then not its propagation (stage3_cause).
	digest=$(tf output -raw image_digest 2>/dev/null || true)
	local acr_pull=new
	if tf state list 2>/dev/null | grep -qx 'azurerm_role_assignment.worker_acr_pull'; then acr_pull=earlier; fi
	step "stage 1/3: storage, identity, roles, registry, logs (region $AZURE_LOCATION)"
	created=1
	tf apply -input=false -auto-approve "${vars[@]}" -var "image_digest=$digest" || die "stage 1 failed (terraform's error above)"

	registry=$(tf output -raw registry_name)
	login=$(tf output -raw registry_login_server)
	repo=$(tf output -raw image_repository)
	step "stage 2/3: push $layout to $repo (token from az acr login --expose-token)"
	BLOBLEADER_REGISTRY_TOKEN=$(az acr login -n "$registry" --expose-token --only-show-errors --query accessToken -o tsv) ||
		die "az acr login -n $registry --expose-token failed (you need AcrPush, Contributor or Owner on $login)"
	export BLOBLEADER_REGISTRY_TOKEN
	ref=$("$GO" -C "$root/infra/image" run . push --layout "$layout" --repository "$repo") || die "the push of $layout to $repo failed (its error above)"
	unset BLOBLEADER_REGISTRY_TOKEN
	digest=${ref##*@}
	echo "pushed $ref"

	# ACI pulls with the identity's AcrPull, which ARM may take up to about
	# 10 minutes to propagate: a group create that failed for that reason is
	# retried (it is replaced on the retry) for PROPAGATION_WAIT seconds in
	# all. Any other failure stops at once, naming its cause.
	step "stage 3/3: $WORKER_COUNT worker container groups pinned to $digest"
	local attempt=1 waited=0 delay cause out=${STAGE3_LOG:-$root/out/deploy-stage3.log}
	mkdir -p "$(dirname "$out")"
	until tf apply -input=false -auto-approve "${vars[@]}" -var "image_digest=$digest" 2>&1 | tee "$out"; do
		cause=$(stage3_cause "$out" "$acr_pull" "$registry" "${repo#*/}@$digest")
		[[ $cause == retry:* ]] || die "stage 3 failed: ${cause#stop: } (terraform's output: $out)"
		((waited < PROPAGATION_WAIT)) ||
			die "stage 3 kept failing for ${waited}s (PROPAGATION_WAIT=$PROPAGATION_WAIT) with ${cause#retry: }; see the errors above. Role assignments can take up to 10 minutes to propagate: run make deploy again, or raise PROPAGATION_WAIT"
		delay=$((attempt * RETRY_BACKOFF))
		((delay <= 180)) || delay=180
		((delay <= PROPAGATION_WAIT - waited)) || delay=$((PROPAGATION_WAIT - waited))
		echo "stage 3 failed (attempt $attempt, ${waited}s of ${PROPAGATION_WAIT}s): ${cause#retry: }; retrying in ${delay}s"
		sleep "$delay"
		waited=$((waited + delay))
		attempt=$((attempt + 1))
	done

	step "outputs"
	tf output
	if [[ -n $operator ]]; then
		wait_for_leader
	else
		echo "not waiting for a leader (no data role to read the lease); watch: az container logs -g $(tf output -raw resource_group_name) -n <group>"
	fi
}

# stage3_cause FILE ACR_PULL REGISTRY IMAGE: why the stage-3 apply whose output is
# FILE failed, as `retry: <cause>` (role assignments or a new identity still
# propagating, which waiting cures) or `stop: <cause>` (anything else,
# named). ACR_PULL is `new` when this deploy's stage 1 created the workers'
# AcrPull assignment, `earlier` when an earlier deploy did: only a new one
# can still be propagating. Errors are told apart by the resource Terraform
# names (`with <address>`) where the service's wording is not documented.
stage3_cause() {
	local f=$1 acr_pull=${2:-new} registry=${3:-<registry>} image=${4:-<repository>@<digest>}
	if grep -qE 'InaccessibleImage|RegistryErrorResponse|unauthorized: authentication required' "$f"; then
		if [[ $acr_pull == new ]]; then
			echo "retry: the image pull was refused (InaccessibleImage): most likely the workers' AcrPull assignment, created by this deploy, still propagating"
		else
			echo "stop: the image pull was refused (InaccessibleImage) although the workers' AcrPull assignment dates from an earlier deploy, so it is not propagating: check that the image is in the registry (az acr repository show -n $registry --image $image) and the identity's AcrPull (az role assignment list --all --assignee \$(terraform -chdir=infra output -raw identity_principal_id))"
		fi
	elif grep -q 'PrincipalNotFound' "$f"; then
		echo "retry: a new identity is not yet known to Entra ID (still propagating)"
	elif grep -q 'with azurerm_monitor_diagnostic_setting\.' "$f"; then
		echo "stop: Azure refused the container groups' diagnostic settings (the route the alerts read), not a role propagation; Microsoft documents ACI diagnostic settings as a preview enabled per subscription: az feature list --namespace Microsoft.ContainerInstance -o table names it, register it (az feature register, then az provider register -n Microsoft.ContainerInstance), or deploy without it: TF_VAR_log_route=legacy make deploy"
	elif grep -q 'MissingSubscriptionRegistration' "$f"; then
		echo "stop: a resource provider is not registered in the subscription (MissingSubscriptionRegistration), not a role propagation: az provider register --namespace <the one named above>"
	elif grep -qE 'AuthorizationFailed|LinkedAuthorizationFailed' "$f"; then
		echo "stop: the deploying principal lacks a permission (AuthorizationFailed), which waiting does not grant"
	else
		echo "stop: not a role-propagation error (see terraform's error above)"
	fi
}

# The lease blob is the truth: leased, with holder and term in its metadata.
wait_for_leader() {
	local account container blob deadline state holder term
	account=$(tf output -raw storage_account_name)
	container=$(tf output -json container_names | sed -n 's/.*"leases": *"\([^"]*\)".*/\1/p')
	blob=$(tf output -raw lease_blob_name)
	deadline=$(($(date +%s) + LEADER_TIMEOUT))
	step "waiting up to ${LEADER_TIMEOUT}s for one leader (lease on $account/$container/$blob)"
	while (($(date +%s) < deadline)); do
		if read -r state holder term < <(az storage blob show --auth-mode login --only-show-errors \
			--account-name "$account" --container-name "$container" --name "$blob" \
			--query '[properties.lease.state, metadata.holder, metadata.term]' -o tsv 2>/dev/null | tr '\t' ' '); then
			if [[ $state == leased && -n $holder && $holder != None ]]; then
				printf 'leader: %s (term %s)\n' "$holder" "$term"
				printf 'watch it:  az container logs -g %s -n %s --follow\n' "$(tf output -raw resource_group_name)" "$holder"
				return 0
			fi
			printf '  lease %s, no leader yet\n' "${state:-absent}"
		else
			printf '  lease blob not readable yet (worker starting, or data role still propagating)\n'
		fi
		sleep "$LEADER_POLL"
	done
	die "no leader after ${LEADER_TIMEOUT}s; check: az container logs -g $(tf output -raw resource_group_name) -n <group>"
}

# destroy_args DIGEST: the variables of the destroy plan. A destroy plans
# the configuration and validates every variable, in a shell that may have
# none of the deploy's TF_VAR_*; alerts on (the default) require a receiver,
# so the destroy turns them off: it removes them either way.
destroy_args() {
	common_vars
	printf '%s\n' -var 'alerts={ enabled = false }' -var "image_digest=$1"
}

destroy() {
	[[ -f $infra/terraform.tfstate ]] || die "no state in $infra/terraform.tfstate: nothing deployed from this checkout"
	step "terraform destroy (resource group, storage with its ledger and history, registry, identity, logs)"
	tf init -input=false >/dev/null
	mapfile -t vars < <(destroy_args "$(tf output -raw image_digest 2>/dev/null || true)")
	read -r -a extra <<<"${TF_VARS:-}"
	vars+=("${extra[@]}")
	tf destroy -input=false -auto-approve "${vars[@]}"
}

# Sourced (by deploy_test.sh): define the functions, run nothing.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0

for n in LEADER_TIMEOUT LEADER_POLL RETRY_BACKOFF PROPAGATION_WAIT WORKER_COUNT; do
	[[ ${!n} =~ ^[0-9]+$ ]] || { echo "deploy: $n=${!n} must be a whole number of seconds (or workers)" >&2; exit 2; }
done
((RETRY_BACKOFF > 0)) || { echo "deploy: RETRY_BACKOFF must be at least 1 second" >&2; exit 2; }

cmd=${1:-}
case $cmd in
preflight) cmd=${2:-deploy} && preflight ;; # `preflight deploy|destroy`: checks only
deploy) preflight && deploy ;;
destroy) preflight && destroy ;;
*) echo "usage: $0 preflight|deploy|destroy" >&2; exit 2 ;;
esac
