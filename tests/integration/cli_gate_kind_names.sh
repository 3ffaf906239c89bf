#!/usr/bin/env bash
# Gate knowledge stays in models/gates/: no C++ source of the layers outside that folder (core, ops,
# framework, models but models/gates, recipes) names a gate kind as a string literal ("pair",
# "routed", …); such code asks the registry (models/gating/registry.h) what a kind supports. The
# kinds are the ones this build registers (`gattn gates --names`, less none, which is no kind).
# Comments are not code and are skipped; a quoted word only counts as a kind name when it is exactly
# the name, so "input file" or "outputs" never match. Tests and configs may name kinds.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# path:literal pairs that may stay, each with its reason. Empty today: keep it that way if you can.
allowed=()

names=$("$gattn" gates --names) || fail "gattn gates --names exited $?"
kinds=$(grep -vx none <<<"$names" | paste -sd '|')
[[ -n $kinds ]] || fail "gattn gates --names listed no kind: $names"

# The check must catch what it is for: a literal in code, not one in a comment.
printf '%s\n' 'if (g.kind == "pair") x = 1;' '// the "pair" gate, in a comment' >"$tmp/probe.cpp"

scan() {  # scan FILE...: print path:line: text for each kind literal outside // comments
  awk -v kinds="$kinds" -v root="$root/" '
    {
      code = $0
      sub(/\/\/.*/, "", code)  # a // inside a string literal cuts the line short: no false hit
      if (code ~ ("\"(" kinds ")\"")) {
        path = FILENAME
        if (index(path, root) == 1) path = substr(path, length(root) + 1)
        print path ":" FNR ": " $0
      }
    }' "$@"
}
[[ $(scan "$tmp/probe.cpp" | wc -l) -eq 1 ]] || fail "the scan should find exactly the probe's code line: $(scan "$tmp/probe.cpp")"

mapfile -t files < <(cd "$root" && find core ops framework models recipes -type f \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -not -path 'models/gates/*' | sort)
[[ ${#files[@]} -gt 100 ]] || fail "found only ${#files[@]} source files under $root"
kept=()
while IFS= read -r hit; do
  [[ -n $hit ]] || continue
  ok=0
  for a in "${allowed[@]}"; do [[ $hit == "${a%%:*}:"* && $hit == *"\"${a#*:}\""* ]] && ok=1; done
  ((ok)) || kept+=("$hit")
done < <(cd "$root" && scan "${files[@]}")
hits=$(printf '%s\n' "${kept[@]}" | sed '/^$/d')
if [[ -n $hits ]]; then
  echo "$hits"
  fail "gate kinds named outside models/gates/ (above): ask the registry (models/gating/registry.h) instead"
fi
echo "ok"
