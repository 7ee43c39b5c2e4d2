#!/usr/bin/env bash
# The Deno-only path (issue 11): in a fresh clone where npm never ran, with nothing but a Deno
# binary on the PATH (no node, no npm; Deno fetches the npm packages from the registry itself),
# `deno run -A mod.ts` answers `initialize` (first, so Deno installs the npm packages itself) and
# installed none of the development tools (no Deno, Bun, esbuild or TypeScript npm package: they are
# optional or in scripts/tools/package.json), `deno install` succeeds, `deno task demo` passes,
# `deno install -g` puts a working `acp-harness` command in a root of its own, and
# `deno publish --dry-run` passes. The clone is removed at the end, also on failure.
#
#   scripts/ci_deno_only.sh path/to/deno
#
# .ci/run passes the Deno binary of its own install (the platform package's real binary).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <path of a deno binary>" >&2
  exit 2
fi
deno_bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [[ ! -x "$deno_bin" ]]; then
  echo "deno-only: $1 is not an executable" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"

work="$(mktemp -d "${TMPDIR:-/tmp}/acp-harness-deno-only-XXXXXX")"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

fail() {
  echo "deno-only: FAILED: $*" >&2
  exit 1
}

# The clone is of the committed HEAD: what a user gets from `git clone`.
git clone --quiet --no-hardlinks "$repo" "$work/clone" || fail "git clone of $repo"
cd "$work/clone"

# A PATH with deno and nothing else: a `node` or `npm` found by anything below would be a bug.
mkdir "$work/bin"
ln -s "$deno_bin" "$work/bin/deno"
# A Deno cache of its own, so nothing comes from an earlier install on this machine.
export DENO_DIR="$work/deno_dir"
export NO_COLOR=1
# The server's data directory (sessions the demo makes), out of the real ~/.acp-harness.
export ACP_HARNESS_HOME="$work/home"
# Every step has a time limit (timeout is looked up before the PATH narrows).
timeout_bin="$(command -v timeout)"
only_deno() { PATH="$work/bin" "$timeout_bin" 300 "$@"; }
step() { echo "deno-only: $*" >&2; }

step "deno $(only_deno deno --version | head -n 1 | cut -d' ' -f2) in $work/clone"

step "deno run -A mod.ts answers initialize (Deno installs the npm packages itself)"
request='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
# stdin closes after the request: the server answers, then exits at end of input.
answer="$(printf '%s\n' "$request" | only_deno deno run -A mod.ts 2>"$work/serve.log")" || {
  cat "$work/serve.log" >&2
  fail "deno run -A mod.ts exited with an error"
}
first_line="$(printf '%s\n' "$answer" | head -n 1)"
case "$first_line" in
  *'"id":1'*'"result"'*'"protocolVersion":1'*) ;;
  *)
    cat "$work/serve.log" >&2
    fail "deno run -A mod.ts did not answer initialize; got: ${first_line:-nothing}"
    ;;
esac

# What Deno installed for the server: its runtime packages, none of the development tools.
for tool in deno bun esbuild typescript dts-bundle-generator @deno+ @oven+ @esbuild+; do
  if compgen -G "node_modules/.deno/${tool}*" >/dev/null; then
    fail "deno run -A mod.ts installed $tool: node_modules/.deno holds $(ls node_modules/.deno | tr '\n' ' ')"
  fi
done
step "deno run -A mod.ts installed $(du -sm node_modules | cut -f1) MB in node_modules," \
  "$(du -sm "$DENO_DIR" | cut -f1) MB in DENO_DIR"

step "deno install"
started=$SECONDS
only_deno deno install >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "deno install"
}
step "deno install took $((SECONDS - started)) s"

step "deno task demo"
only_deno deno task demo >"$work/demo.log" 2>&1 || {
  cat "$work/demo.log" >&2
  fail "deno task demo"
}
grep -q 'The turn ended with "end_turn"; the server exited with code 0' "$work/demo.log" || {
  cat "$work/demo.log" >&2
  fail "deno task demo: the turn did not end with end_turn and exit code 0"
}

step "deno install -g (the README's command, into a root of its own)"
only_deno deno install -g -A -n acp-harness --config deno.json --root "$work/global" ./mod.ts \
  >"$work/global.log" 2>&1 || {
  cat "$work/global.log" >&2
  fail "deno install -g"
}
# The installed command runs `deno`: from the PATH, as anywhere a Deno user has it; and from
# another directory, so nothing of the clone's directory is what makes it work.
version="$(cd "$work" && only_deno "$work/global/bin/acp-harness" --version 2>&1)" || {
  printf '%s\n' "$version" >&2
  fail "the installed acp-harness --version exited with an error"
}
[[ "$version" == "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' deno.json)" ]] ||
  fail "the installed acp-harness --version printed ${version:-nothing}"
only_deno deno uninstall -g --root "$work/global" acp-harness >"$work/uninstall.log" 2>&1 || {
  cat "$work/uninstall.log" >&2
  fail "deno uninstall -g"
}
[[ ! -e "$work/global/bin/acp-harness" ]] || fail "deno uninstall -g left the command in place"

step "deno publish --dry-run"
only_deno deno publish --dry-run >"$work/publish.log" 2>&1 || {
  cat "$work/publish.log" >&2
  fail "deno publish --dry-run"
}

# npm never ran: no package-lock-driven tree, only Deno's own layout.
[[ -d node_modules/.deno ]] || fail "node_modules was not made by Deno"

step "passed"
