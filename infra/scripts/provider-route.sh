#!/usr/bin/env bash
# Decides where the offline Terraform checks get the azurerm provider, and
# prints one word: `registry` when the public Terraform registry answers
# within a few seconds (plain `terraform init`), otherwise `mirror` (build
# the provider from source into a filesystem mirror; see infra.mk).
# Says why on stderr. Never fails: no answer means `mirror`.
set -uo pipefail
url=${TF_REGISTRY_PROBE_URL:-https://registry.terraform.io/.well-known/terraform.json}
timeout=${TF_REGISTRY_PROBE_TIMEOUT:-5}
if ! command -v curl >/dev/null 2>&1; then
	echo "provider route: no curl to probe the Terraform registry; building from source" >&2
	echo mirror
	exit 0
fi
t0=$(date +%s%N)
if curl -fsS --max-time "$timeout" -o /dev/null "$url" 2>/dev/null; then
	echo "provider route: the Terraform registry answered in $((($(date +%s%N) - t0) / 1000000)) ms; plain terraform init" >&2
	echo registry
else
	echo "provider route: the Terraform registry did not answer within ${timeout}s; building azurerm from source into a filesystem mirror" >&2
	echo mirror
fi
