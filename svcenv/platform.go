package svcenv

import (
	"fmt"
	"runtime"
)

// Platform names a target operating system the way manifests and node
// configuration spell it. It decides which variables Environ produces and how
// paths are written, independently of the host the code runs on.
type Platform string

// The platforms of service protocol 1.
const (
	Linux   Platform = "linux"
	MacOS   Platform = "macos"
	Windows Platform = "windows"
)

// ParsePlatform returns the platform named s. Only the three protocol names
// are accepted; Go's "darwin" is not, because manifests never say it.
func ParsePlatform(s string) (Platform, error) {
	p := Platform(s)
	if err := p.check(); err != nil {
		return "", err
	}
	return p, nil
}

// HostPlatform returns the platform of the running binary: linux, macos (for
// GOOS darwin) or windows. On any other GOOS it returns the GOOS itself, which
// is not a valid Platform, so every function of this package given it fails
// with a message naming it.
func HostPlatform() Platform {
	return hostPlatform(runtime.GOOS)
}

func hostPlatform(goos string) Platform {
	if goos == "darwin" {
		return MacOS
	}
	return Platform(goos)
}

// Valid reports whether p is one of Linux, MacOS and Windows.
func (p Platform) Valid() bool {
	return p == Linux || p == MacOS || p == Windows
}

func (p Platform) check() error {
	if p.Valid() {
		return nil
	}
	if p == "darwin" {
		return fmt.Errorf("svcenv: unknown platform %q (macOS is spelled \"macos\")", string(p))
	}
	return fmt.Errorf("svcenv: unknown platform %q (want linux, macos or windows)", string(p))
}
