#!/usr/bin/env bash
# Checks GitHub workflows for expressions spliced into shell code: no `${{ … }}`
# inside a `run:` script. GitHub substitutes an expression's text into the
# script before the shell parses it, so a workflow input (or any other value a
# user controls) becomes shell code. Pass values through `env:` and use "$VAR".
#
#   workflow-env-rule.sh FILE...
#
# Prints FILE:LINE: and the line for each violation; exit 1 if any, 2 on usage.
set -euo pipefail
(($#)) || { echo "usage: workflow-env-rule.sh FILE..." >&2; exit 2; }
status=0
for f in "$@"; do
	[[ -r $f ]] || { echo "workflow-env-rule: cannot read $f" >&2; exit 2; }
	awk -v file="$f" '
		function indent(s) { match(s, /^ */); return RLENGTH }
		# Inside a block scalar `run: |` (or >): lines indented deeper than the key.
		in_block && ($0 ~ /^[[:space:]]*$/ || indent($0) > key_indent) {
			if ($0 ~ /\$\{\{/) { printf "%s:%d: expression in a run script: %s\n", file, NR, $0; bad = 1 }
			next
		}
		{ in_block = 0 }
		/^[[:space:]]*(-[[:space:]]+)?run:/ {
			line = $0
			sub(/#.*/, "", line)
			key_indent = indent($0)
			if ($0 ~ /^[[:space:]]*-[[:space:]]+run:/) key_indent += 2
			value = line
			sub(/^[[:space:]]*(-[[:space:]]+)?run:[[:space:]]*/, "", value)
			if (value ~ /^[|>][-+0-9]*[[:space:]]*$/) { in_block = 1; next }
			if ($0 ~ /\$\{\{/) { printf "%s:%d: expression in a run script: %s\n", file, NR, $0; bad = 1 }
		}
		END { exit bad }
	' "$f" || status=1
done
exit $status
