#!/usr/bin/env bash
# Proves every `go test ... -run X`, `-bench X` and `-fuzz X` command written in the docs runs
# something: for each package and each alternative of the pattern (A|B: A, then B; a subtest
# pattern A/b: A), `go test -list` must name at least one test, benchmark, fuzz target or
# example. A renamed or moved test then fails CI instead of leaving a command that runs nothing
# (issue 37). Commands written across a line break inside backticks are joined first; a package
# written as a placeholder (<pkg>, ...) is left out.
#   .ci/check-readme-commands.sh                 # .ci/README.md, README.md and docs/*.md
#   .ci/check-readme-commands.sh README.md       # one file
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(.ci/README.md README.md docs/*.md)

# One command a line: the text from `go test` to the closing backtick, a # comment or the end of
# the line, with inline code broken over two lines joined.
commands() {
	awk '{
		line = (pending == "" ? $0 : pending " " $0)
		n = gsub(/`/, "`", line)
		if (n % 2 == 1) { pending = line; next }
		pending = ""
		print line
	}' "$1" | grep -o 'go test[^`#]*' || true
}

fail=0 checked=0
declare -A seen
for f in "${files[@]}"; do
	while IFS= read -r cmd; do
		read -ra words <<<"$cmd"
		case "$cmd" in *'<'*) continue ;; esac # a placeholder command (<pkg>, <Target>)
		pkgs=() patterns=()
		for ((i = 2; i < ${#words[@]}; i++)); do
			w="${words[i]}"
			case "$w" in
			-run | -bench | -fuzz)
				i=$((i + 1))
				p="${words[i]:-}"
				p="${p#\'}" p="${p%\'}" p="${p#\"}" p="${p%\"}"
				[ "$p" = '^$' ] || [ "$p" = "..." ] || [ "$p" = "'...'" ] || patterns+=("$p")
				;;
			-count | -timeout | -benchtime | -o | -fuzztime | -fuzzminimizetime | -cpu | -parallel | -tags | -p) i=$((i + 1)) ;;
			-*) ;;
			./* | .) pkgs+=("$w") ;;
			*) ;; # a shell word after the command (&&, a pipe) ends nothing we read
			esac
		done
		[ ${#patterns[@]} -gt 0 ] || continue
		[ ${#pkgs[@]} -gt 0 ] || pkgs=(.)
		for pkg in "${pkgs[@]}"; do
			case "$pkg" in *'<'* | *'...'*) continue ;; esac
			for p in "${patterns[@]}"; do
				# Alternatives at the top level only; a subtest pattern is listed by its test.
				if [[ "$p" == *"("* ]]; then alts=("${p%%/*}"); else IFS='|' read -ra alts <<<"$p"; fi
				for a in "${alts[@]}"; do
					a="${a%%/*}"
					[ -n "$a" ] || continue
					key="$pkg $a"
					[ -z "${seen[$key]:-}" ] || continue
					seen[$key]=1
					checked=$((checked + 1))
					if ! out=$(go test -list "$a" "$pkg" 2>&1); then
						echo "check-readme-commands: $f: go test -list '$a' $pkg failed (from: $cmd):" >&2
						echo "$out" >&2
						fail=1
						continue
					fi
					if ! grep -qE '^(Test|Benchmark|Fuzz|Example)' <<<"$out"; then
						echo "check-readme-commands: $f: '$a' matches no test, benchmark or fuzz target in $pkg (from: $cmd)" >&2
						fail=1
					fi
				done
			done
		done
	done < <(commands "$f")
done
echo "check-readme-commands: $checked patterns checked in ${files[*]}"
exit $fail
