#!/bin/sh
# The engine's mutation score (issue 11 point 3): gremlins v0.6.0 mutates
# package engine and counts a mutant killed when the engine's own tests or
# the simulator's (sim/..., with the scenarios under scenarios/) fail.
#
#	sh bench/mutation.sh [gremlins flags...]   e.g. -E 'service\.go'
#
# gremlins runs a package's own tests unless --integration is given, and
# then it runs `go test ./...` from the module root for every mutant. So the
# measurement runs in a copy of the module trimmed to what engine and sim
# build on: engine, sim/..., their imports without the imports' tests, and
# scenarios/. The copy is taken from the files git knows (committed, staged
# or untracked but not ignored), so a clean checkout and a tree with new
# tests measure the same way. The results land in $TMPDIR/svcrun-mutation.json
# (override with MUTATION_OUT) and the last line is the score.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${MUTATION_OUT:-${TMPDIR:-/tmp}/svcrun-mutation.json}
gremlins=$(go env GOPATH)/bin/gremlins
if [ ! -x "$gremlins" ]; then
	go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
fi
module=$(cd "$root" && go list -m)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
# The module's packages engine and sim's tests need, as directories.
dirs=$(go list -deps -test -f '{{if .Module}}{{if eq .Module.Path "'"$module"'"}}{{.Dir}}{{end}}{{end}}' ./engine ./sim/... | sort -u)
files() { git ls-files --cached --others --exclude-standard -- "$@"; }
# The rule table's test (sim/scenario) reads the rules' documents.
files go.mod go.sum scenarios docs/protocol.md docs/decisions.md | xargs cp --parents -t "$work"
for d in $dirs; do
	rel=${d#"$root"/}
	case $rel in
	engine | sim | sim/*) keep=tests ;;
	*) keep=code ;;
	esac
	files "$rel" |
		while read -r f; do
			case $f in
			"$rel"/*/*)
				# a file of a sub-package (listed on its own) or of testdata/
				case $f in "$rel"/testdata/*) [ $keep = tests ] || continue ;; *) continue ;; esac ;;
			*_test.go) [ $keep = tests ] || continue ;;
			esac
			echo "$f"
		done | xargs -r cp --parents -t "$work"
done
cd "$work"
go build ./... && go vet ./engine ./sim/...

# gremlins v0.6.0 takes a mutant in a switch case's condition for code no
# test reaches, since Go's coverage gives case conditions no block of their
# own (go-gremlins/gremlins#298): a third of the engine's mutants would be
# "not covered" however well tested. So gremlins finds on its PATH a go that
# adds to the coverage profile it writes a block for each case condition
# whose case body ran (the rule of the fix proposed upstream, #299); the
# mutants of the conditions of cases no test enters stay "not covered".
mkdir "$work/.bin"
#
# The same go runs each mutant's `go test ./...` as two: the engine's
# tests and the scenarios first, the simulator's explorations and the
# replay of explored journals (46 s of the first's 48 s on its own) only
# if those pass. The verdict is the same (a mutant is killed when any test
# fails), and a mutant the first tests kill costs a few seconds. Neither
# runs go vet, which judges the code, not its behaviour.
cat >"$work/.bin/go" <<'WRAPPER'
#!/bin/sh
case "$*" in
"test "*" -failfast ./...")
	set -- $(echo "$*" | sed 's| \./\.\.\.$||') -vet=off
	slow='^TestExploredJournalsReplay$'
	"$MUTATION_REAL_GO" "$@" -skip "$slow" ./engine ./sim/scenario ./sim/timeline || exit
	"$MUTATION_REAL_GO" "$@" -run "$slow" ./sim/scenario || exit
	exec "$MUTATION_REAL_GO" "$@" ./sim
	;;
esac
"$MUTATION_REAL_GO" "$@"
rc=$?
prof= prev=
for a in "$@"; do
	[ "$prev" = -coverprofile ] && prof=$a
	prev=$a
done
[ $rc = 0 ] && [ -n "$prof" ] || exit $rc
awk -v mod="$MUTATION_MODULE/" '
	FNR == NR {
		# the profile: "MODULE/engine/x.go:L1.C1,L2.C2 STATEMENTS COUNT"
		if ($3 > 0 && split($1, f, ":") == 2) {
			split(f[2], at, ",")
			ran[f[1] ":" at[1]] = 1
		}
		next
	}
	/^\t*case .*:$/ {
		file = mod "engine/" substr(FILENAME, length(dir) + 2)
		body = FNR "." (length($0) + 1)
		if ((file ":" body) in ran)
			print file ":" FNR "." index($0, "case") "," body " 1 1"
	}' dir="$MUTATION_ENGINE" "$prof" $(ls "$MUTATION_ENGINE"/*.go | grep -v '_test\.go$') >>"$prof.case" &&
	cat "$prof.case" >>"$prof" && rm -f "$prof.case"
WRAPPER
chmod +x "$work/.bin/go"
export MUTATION_REAL_GO="$(command -v go)" MUTATION_MODULE="$module" MUTATION_ENGINE="$work/engine"
export PATH="$work/.bin:$PATH"

start=$(date +%s)
"$gremlins" unleash --integration --coverpkg "$module/engine" --workers 1 --timeout-coefficient 2 \
	--output "$out" "$@" "$work/engine"
echo "mutation run: $(($(date +%s) - start)) s, results in $out"
