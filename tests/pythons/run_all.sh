#!/usr/bin/env bash
# Run tests/pythons (the launcher and the hook path, no torch) on each CPython the package claims
# besides the main one: 3.9, 3.10, 3.12 and 3.13 by default, or the versions given as arguments
# (run_all.sh 3.9 3.13). Each found interpreter gets a fresh venv under
# ${TMPDIR:-/tmp}/npuprof-pythons/3.X with this checkout installed as `pip install -e '.[test]'`
# (no torch: the package does not depend on it), then runs pytest there. One line per version at
# the end: "python 3.9.18: passed", "... failed", or "python 3.9: missing". Exits 1 if any
# interpreter that was found failed; a missing one is reported, not a failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SCRATCH="${TMPDIR:-/tmp}/npuprof-pythons"
PYENV_VERSIONS="${PYENV_ROOT:-$HOME/.pyenv}/versions"
# Seconds each step (venv, pip install, pytest) may take before it counts as failed.
STEP_LIMIT="${NPUPROF_PYTHONS_STEP_LIMIT:-600}"

if [ "$#" -gt 0 ]; then
    versions=("$@")
else
    versions=(3.9 3.10 3.12 3.13)
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# Nothing of the caller's Python set-up may leak into the venvs or the tests.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONNOUSERSITE PYTHONSAFEPATH VIRTUAL_ENV PIP_REQUIRE_VIRTUALENV

limited() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$STEP_LIMIT" "$@"
    else
        "$@"
    fi
}

# The interpreter's full version if it is CPython $1 (e.g. 3.9), nothing otherwise.
cpython_version() {
    "$2" -c 'import platform, sys
ok = sys.implementation.name == "cpython" and "%d.%d" % sys.version_info[:2] == sys.argv[1]
print(platform.python_version() if ok else "")' "$1" 2>/dev/null || true
}

# The path of a CPython $1: the newest pyenv build of it (plain X.Y.Z only, no free-threaded or
# other variant), else python$1 on PATH. Nothing printed when none works.
find_python() {
    local version=$1 candidate dir
    local candidates=()
    if [ -d "$PYENV_VERSIONS" ]; then
        while IFS= read -r dir; do
            candidates+=("$PYENV_VERSIONS/$dir/bin/python$version")
        done < <(ls "$PYENV_VERSIONS" | grep -E "^${version//./\\.}\.[0-9]+$" | sort -rV)
    fi
    if candidate="$(command -v "python$version" 2>/dev/null)"; then
        candidates+=("$candidate")
    fi
    for candidate in "${candidates[@]+"${candidates[@]}"}"; do
        if [ -x "$candidate" ] && [ -n "$(cpython_version "$version" "$candidate")" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 0
}

mkdir -p "$SCRATCH"
summary=()
failed=0
started=$SECONDS
for version in "${versions[@]}"; do
    python="$(find_python "$version")"
    if [ -z "$python" ]; then
        echo "== python $version: not found (pyenv versions in $PYENV_VERSIONS, or python$version on PATH)"
        summary+=("python $version: missing")
        continue
    fi
    full="$(cpython_version "$version" "$python")"
    venv="$SCRATCH/$version"
    log="$SCRATCH/$version.log"
    step_started=$SECONDS
    echo "== python $full ($python): venv $venv"
    : >"$log"
    result=passed
    if ! { rm -rf "$venv" && limited "$python" -m venv "$venv"; } >>"$log" 2>&1; then
        result="failed"
        echo "python $full: could not create the venv:"
        tail -n 20 "$log"
    elif ! limited "$venv/bin/python" -m pip install --quiet -e "$ROOT[test]" >>"$log" 2>&1; then
        result="failed"
        echo "python $full: pip install -e '$ROOT[test]' failed:"
        tail -n 40 "$log"
    elif ! (cd "$ROOT" && limited "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        --confcutdir "$ROOT/tests/pythons" tests/pythons); then
        result="failed"
    fi
    echo "== python $full: $result in $((SECONDS - step_started)) s"
    summary+=("python $full: $result")
    [ "$result" = passed ] || failed=1
done

echo "== npuprof-launch on each Python ($((SECONDS - started)) s):"
printf '%s\n' "${summary[@]}"
exit "$failed"
