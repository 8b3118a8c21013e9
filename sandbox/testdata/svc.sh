#!/bin/sh
# svc.sh: a shell service doing what services ordinarily do, each of which
# the sandbox must allow: write its data dir, home and TMPDIR, read the
# system, its bundle and the random device, run its bundle's executables
# and its granted tool, write to /dev/null. Any failure fails the op.
set -eu
case "${1:-}" in
fingerprint) ;;
*) exit 64 ;;
esac
bin=$(dirname "$0")
echo state >"$OARBANK_MODULE_DATA/state"
mkdir -p "$HOME/.cache/svc" "$XDG_RUNTIME_DIR/sock"
echo tmp >"$TMPDIR/x"
mv "$TMPDIR/x" "$HOME/.cache/svc/x"
rm -r "$HOME/.cache/svc" "$XDG_RUNTIME_DIR/sock"
cat /etc/passwd "$bin/../module.toml" >/dev/null
head -c 16 /dev/urandom | od >/dev/null
ls /usr/bin >/dev/null
"$bin/helper.sh"
mytool
echo "all good" >&2
printf '{"healthy":true,"running":true,"message":"shell service"}\n'
