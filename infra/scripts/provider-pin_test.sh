#!/usr/bin/env bash
# The azurerm provider is pinned exactly to the version the offline checks
# build and validate (AZURERM_VERSION in infra/infra.mk), in every root that
# configures it, and the committed lock file of each root locks that same
# version (and, when it records hashes, the registry's). Run by `make test-infra`; `terraform version -json`
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

# The committed lock file must exist and lock that version. Its hashes, when
# recorded, are the registry's: zip hashes (zh:) for the platforms of the
# release, never only h1: of some local build (the offline checks' provider is
# built from source and works on a copy without the lock file). A lock file
# without hashes is what this repository commits where the registry cannot be
# reached (docs/deploy.md, "The lock file"): the first `terraform init`
# against the registry verifies the release's signature and records them.
for lock in "$infra/.terraform.lock.hcl" "$infra/ci/.terraform.lock.hcl"; do
	label=infra${lock#"$infra"}
	if [[ ! -f $lock ]]; then
		fail "$label is missing: commit it (docs/deploy.md, \"The lock file\"; make tf-lock where the registry answers)"
		continue
	fi
	block=$(awk '/provider "registry.terraform.io\/hashicorp\/azurerm"/ { p = 1 } p { print } p && /^}/ { exit }' "$lock")
	[[ -n $block ]] || { fail "$label has no entry for registry.terraform.io/hashicorp/azurerm"; continue; }
	grep -q "version[[:space:]]*=[[:space:]]*\"$want\"" <<<"$block" || fail "$label does not lock azurerm $want"
	grep -q "constraints[[:space:]]*=[[:space:]]*\"$want\"" <<<"$block" || fail "$label: constraints are not \"$want\" (run make tf-lock)"
	if grep -q '"h1:\|"zh:' <<<"$block"; then
		grep -q '"zh:' <<<"$block" || fail "$label has h1: hashes but no registry (zh:) hashes: a local build's hashes, which a registry init refuses (run make tf-lock)"
	else
		echo "provider pin: $label locks azurerm $want without hashes yet (recorded by the first terraform init against the registry)"
	fi
done

((fails == 0)) && echo "provider pin: azurerm $want everywhere"
((fails == 0))
