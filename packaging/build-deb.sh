#!/usr/bin/env bash
# Builds the svcrun Debian package with dpkg-deb:
#   bash packaging/build-deb.sh [OUTDIR]      (default OUTDIR: dist/)
# It holds /usr/bin/svcrun, the systemd unit, the commented
# /etc/svcrun/svcrun.toml and /etc/default/svcrun (conffiles) and
# /var/lib/svcrun. Installing it enables and starts nothing: see
# docs/operating.md. VERSION (a Debian version, e.g. 1.2.3) overrides the one
# taken from git; GOARCH cross-builds.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}

goarch=$(go env GOARCH)
case "$goarch" in
	amd64 | arm64 | riscv64 | ppc64el | s390x) arch=$goarch ;;
	386) arch=i386 ;;
	arm) arch=armhf ;;
	ppc64le) arch=ppc64el ;;
	*) echo "build-deb.sh: no Debian architecture for GOARCH $goarch" >&2; exit 1 ;;
esac
if [ -z "${VERSION:-}" ]; then
	# A tag v1.2.3 gives 1.2.3; otherwise 0.0.0~git<date>.<commit>, which
	# sorts before any release.
	if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
		VERSION=${tag#v}
	else
		VERSION="0.0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S).$(git rev-parse --short=12 HEAD)"
	fi
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/systemd/system" \
	"$root/etc/svcrun" "$root/etc/default" "$root/var/lib/svcrun" "$root/usr/share/doc/svcrun"
# Static (no cgo) and stamped with the commit, which `svcrun version` shows.
CGO_ENABLED=0 go build -trimpath -buildvcs=true -o "$root/usr/bin/svcrun" ./cmd/svcrun
install -m 0644 packaging/svcrun.service "$root/usr/lib/systemd/system/svcrun.service"
install -m 0644 packaging/svcrun.toml "$root/etc/svcrun/svcrun.toml"
install -m 0644 packaging/svcrun.default "$root/etc/default/svcrun"
install -m 0644 docs/operating.md "$root/usr/share/doc/svcrun/operating.md"
install -m 0644 docs/metrics.md packaging/svcrun-alerts.yml "$root/usr/share/doc/svcrun/"
install -m 0755 packaging/postinst "$root/DEBIAN/postinst"
install -m 0755 packaging/prerm "$root/DEBIAN/prerm"
install -m 0755 packaging/postrm "$root/DEBIAN/postrm"
printf '/etc/svcrun/svcrun.toml\n/etc/default/svcrun\n' >"$root/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: svcrun
Version: $VERSION
Architecture: $arch
Maintainer: svcrun maintainers <svcrun@oarbank.invalid>
Installed-Size: $size
Section: admin
Priority: optional
Homepage: https://github.com/oarbank/svcrun
Description: service manager of the node agent
 svcrun runs the modules' services and probes on this node, in cgroup v2
 containers, and leases their capabilities to jobs. It runs under systemd
 (svcrun.service), which the package installs but does not enable.
CONTROL

mkdir -p "$out"
deb="$out/svcrun_${VERSION}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
