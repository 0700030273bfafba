#!/usr/bin/env bash
# Put a from-source build of the azurerm provider into a Terraform filesystem mirror.
#
#   provider-mirror.sh MODULE GOVERSION BUILD_DIR MIRROR_FILE
#
# MIRROR_FILE is .../registry.terraform.io/hashicorp/azurerm/<v>/linux_amd64/terraform-provider-azurerm_v<v>.
# The build lives in BUILD_DIR (outside the repo, reused by later runs):
#   BUILD_DIR/terraform-provider-azurerm   the binary `go install` wrote
#   BUILD_DIR/build.log                    its log, ending with a line `rc=<exit code>`
# 1. A finished build (log ends rc=0, binary carries MODULE@GOVERSION build info) is reused.
# 2. A build in progress (log without rc=, a `go install` of MODULE still running) is
#    waited for, never duplicated (AZURERM_WAIT_MINUTES, default 60; polled every
#    AZURERM_POLL_SECONDS, default 15).
# 3. Otherwise this script runs the go install itself, holding BUILD_DIR/.lock.
set -euo pipefail

module=$1 goversion=$2 build_dir=$3 mirror_file=$4
GO=${GO:-go}
wait_minutes=${AZURERM_WAIT_MINUTES:-60}
poll_seconds=${AZURERM_POLL_SECONDS:-15}
bin="$build_dir/$(basename "$module")" # go install names it after the module
log="$build_dir/build.log"

say() { printf 'provider-mirror: %s\n' "$*" >&2; }

# The binary is complete and is the pinned module version (a half-written or
# foreign binary has no such build info).
binary_ok() {
	[[ -s $bin ]] && "$GO" version -m "$bin" 2>/dev/null |
		awk -v m="$module" -v v="$goversion" '$1 == "mod" && $2 == m && $3 == v { found = 1 } END { exit !found }'
}

log_rc() { [[ -f $log ]] && sed -n 's/^rc=\([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1; }

build_running() { pgrep -f "go install.*${module}@" >/dev/null 2>&1; }

install_into_mirror() {
	mkdir -p "$(dirname "$mirror_file")"
	# Already this very build (a hard link of it: an earlier run installed it).
	# mv refuses to move a file onto itself, so there is nothing to do.
	if [[ $bin -ef $mirror_file ]]; then
		say "mirror ready: $mirror_file"
		return
	fi
	local tmp="$mirror_file.tmp.$$"
	ln -f "$bin" "$tmp" 2>/dev/null || cp "$bin" "$tmp"
	chmod 0755 "$tmp"
	mv -f "$tmp" "$mirror_file"
	say "mirror ready: $mirror_file"
}

mkdir -p "$build_dir"

# 2. Wait for a build someone else started (log open, no rc= yet, process alive).
if [[ -f $log && -z $(log_rc) ]] && build_running; then
	say "a build of $module is already running (log: $log); waiting up to ${wait_minutes} min"
	deadline=$(($(date +%s) + wait_minutes * 60))
	while [[ -z $(log_rc) ]] && build_running; do
		if (($(date +%s) >= deadline)); then
			say "gave up after ${wait_minutes} min; the build is still running (see $log)"
			exit 1
		fi
		sleep "$poll_seconds"
		say "still building... ($(wc -l <"$log") log lines)"
	done
fi

# 1. Reuse a finished build.
if [[ $(log_rc) == 0 ]] && binary_ok; then
	say "reusing $bin ($(du -h "$bin" | cut -f1))"
	install_into_mirror
	exit 0
fi
if [[ ! -f $log ]] && binary_ok; then
	say "reusing $bin (no build log, build info matches $module@$goversion)"
	install_into_mirror
	exit 0
fi

# 3. Build it here, once (a second make run waits on the lock).
exec 9>"$build_dir/.lock"
flock 9
if [[ $(log_rc) == 0 ]] && binary_ok; then # built while we waited for the lock
	install_into_mirror
	exit 0
fi
say "building $module@$goversion (~22 min cold, ~8 min with a warm module cache, ~4.6 GB RAM); log: $log"
start=$(date +%s)
rc=0
GOBIN="$build_dir" nice -n 10 "$GO" install -trimpath -ldflags='-s -w' "$module@$goversion" >"$log" 2>&1 || rc=$?
echo "rc=$rc" >>"$log"
if ((rc != 0)) || ! binary_ok; then
	tail -n 30 "$log" >&2
	say "build failed (rc=$rc); full log: $log"
	exit 1
fi
say "built in $(($(date +%s) - start)) s"
install_into_mirror
