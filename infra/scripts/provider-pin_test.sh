#!/usr/bin/env bash
# The azurerm provider is pinned exactly to the version the offline checks
# build and validate (AZURERM_VERSION in infra/infra.mk), in every root that
# configures it, and a committed lock file (if any) locks that same version
# with registry hashes. Run by `make test-infra`; `terraform version -json`
# after init then shows the version Terraform actually selected.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
infra=$(dirname "$here")
fails=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

want=$(sed -n 's/^AZURERM_VERSION[[:space:]]*:=[[:space:]]*\([0-9.]*\)[[:space:]]*$/\1/p' "$infra/infra.mk")
[[ -n $want ]] || { echo "FAIL: no AZURERM_VERSION in infra/infra.mk"; exit 1; }

# The version constraint inside `azurerm = { … }` of required_providers.
constraint() {
	awk '/azurerm[[:space:]]*=[[:space:]]*\{/ { inblock = 1 } inblock && /version[[:space:]]*=/ { sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit } inblock && /\}/ { inblock = 0 }' "$1"
}
for root in "$infra" "$infra/ci"; do
	got=$(constraint "$root/terraform.tf")
	label=infra${root#"$infra"}/terraform.tf
	[[ $got == "$want" || $got == "= $want" ]] ||
		fail "$label: azurerm version constraint is \"$got\"; pin it exactly to \"$want\", the version the offline checks build (infra/infra.mk AZURERM_VERSION)"
done

# A committed lock file must lock that version, with the registry's zip
# hashes (zh:) for every platform of its releases and h1: hashes.
for lock in "$infra/.terraform.lock.hcl" "$infra/ci/.terraform.lock.hcl"; do
	[[ -f $lock ]] || continue
	block=$(awk '/provider "registry.terraform.io\/hashicorp\/azurerm"/ { p = 1 } p { print } p && /^}/ { exit }' "$lock")
	grep -q "version[[:space:]]*=[[:space:]]*\"$want\"" <<<"$block" || fail "$lock does not lock azurerm $want"
	grep -q "constraints[[:space:]]*=[[:space:]]*\"$want\"" <<<"$block" || fail "$lock: constraints are not \"$want\" (run make tf-lock)"
	grep -q '"zh:' <<<"$block" || fail "$lock has no registry (zh:) hashes (run make tf-lock)"
done

((fails == 0)) && echo "provider pin: azurerm $want everywhere"
((fails == 0))
