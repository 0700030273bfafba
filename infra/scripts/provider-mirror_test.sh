#!/usr/bin/env bash
# Offline test of provider-mirror.sh with a tiny stand-in module served from a
# file:// module proxy (no network): build, reuse, wait for a running build, and
# rebuild after a failed one. Run by `make test-infra`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$here/provider-mirror.sh"
GO=${GO:-go}
work=$(mktemp -d)
cleanup() {
	[[ -n ${sleeper:-} ]] && kill "$sleeper" 2>/dev/null || true
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
module=example.com/terraform-provider-azurerm
version=v1.0.0
build="$work/build"
mirror="$work/mirror/registry.terraform.io/hashicorp/azurerm/5.2.0/linux_amd64/terraform-provider-azurerm_v5.2.0"
fails=0 passes=0
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }
pass() { passes=$((passes + 1)); }
check() { if eval "$1"; then pass; else fail "$2"; fi; }

# A file:// module proxy holding $module@$version (a main package).
proxy="$work/proxy/$module/@v"
mkdir -p "$proxy" "$work/src/$module@$version"
printf 'module %s\n\ngo 1.21\n' "$module" | tee "$proxy/$version.mod" >"$work/src/$module@$version/go.mod"
printf 'package main\n\nfunc main() {}\n' >"$work/src/$module@$version/main.go"
printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}' "$version" >"$proxy/$version.info"
echo "$version" >"$proxy/list"
(cd "$work/src" && "$GO" run "$here/testdata/zipmod.go" "$proxy/$version.zip" "$module@$version")

mirror_run() { # output in $work/out
	env GO="$GO" GOPROXY="file://$work/proxy" GOSUMDB=off GOFLAGS=-modcacherw GOMODCACHE="$work/modcache" \
		AZURERM_POLL_SECONDS=1 AZURERM_WAIT_MINUTES=1 \
		bash "$script" "$module" "$version" "$build" "$mirror" >"$work/out" 2>&1
}

# 1. Nothing cached: it builds, logs rc=0, fills the mirror.
check 'mirror_run' "first run failed: $(cat "$work/out" 2>/dev/null)"
check '[[ -x $mirror ]]' "mirror binary missing after a build"
check 'grep -qx "rc=0" "$build/build.log"' "build.log does not end with rc=0"
check 'grep -q "building $module@$version" "$work/out"' "first run did not say it builds"

# 2. Cached: reused, no second build.
rm -f "$mirror"
check 'mirror_run' "reuse run failed: $(cat "$work/out")"
check 'grep -q "reusing" "$work/out" && ! grep -q "building" "$work/out"' "second run rebuilt instead of reusing: $(cat "$work/out")"
check '[[ -x $mirror ]]' "mirror binary missing after reuse"

# 3. A build in progress (log without rc=, a `go install` of the module alive): waited for.
rm -f "$mirror"
echo "go: downloading $module $version" >"$build/build.log"
(exec -a "go install -trimpath $module@$version" sleep 30) &
sleeper=$!
(sleep 2 && echo "rc=0" >>"$build/build.log") &
check 'mirror_run' "waiting run failed: $(cat "$work/out")"
check 'grep -q "already running" "$work/out" && grep -q "reusing" "$work/out" && ! grep -q "building $module" "$work/out"' "did not wait for the running build: $(cat "$work/out")"
kill "$sleeper" 2>/dev/null || true
wait "$sleeper" 2>/dev/null || true
sleeper=

# 4. A failed earlier build (rc=1) is not reused: it builds again.
rm -f "$mirror"
printf 'boom\nrc=1\n' >"$build/build.log"
check 'mirror_run' "rebuild after failure failed: $(cat "$work/out")"
check 'grep -q "building $module" "$work/out" && grep -qx "rc=0" "$build/build.log"' "did not rebuild after rc=1: $(cat "$work/out")"

# 5. The mirror already holds this build (a hard link of it: a second make run,
#    or one that waited for another's build): reused again, nothing left behind.
check 'mirror_run' "re-run over an installed mirror failed: $(cat "$work/out")"
check '[[ -x $mirror ]]' "mirror binary missing after a re-run over it"
check '[[ -z $(compgen -G "$mirror.tmp.*") ]]' "a temporary file was left beside the mirror: $(ls "$(dirname "$mirror")")"

printf '%d passed, %d failed\n' "$passes" "$fails"
((fails == 0))
