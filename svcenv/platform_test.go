package svcenv

import (
	"runtime"
	"testing"
)

func TestParsePlatform(t *testing.T) {
	for _, s := range []string{"linux", "macos", "windows"} {
		p, err := ParsePlatform(s)
		if err != nil || string(p) != s {
			t.Errorf("ParsePlatform(%q) = %q, %v", s, p, err)
		}
	}
	for s, want := range map[string]string{
		"darwin": `svcenv: unknown platform "darwin" (macOS is spelled "macos")`,
		"Linux":  `svcenv: unknown platform "Linux" (want linux, macos or windows)`,
		"":       `svcenv: unknown platform "" (want linux, macos or windows)`,
	} {
		p, err := ParsePlatform(s)
		if err == nil || err.Error() != want {
			t.Errorf("ParsePlatform(%q) = %q, %v; want error %s", s, p, err, want)
		}
	}
}

func TestHostPlatform(t *testing.T) {
	for goos, want := range map[string]Platform{
		"linux": Linux, "darwin": MacOS, "windows": Windows, "freebsd": "freebsd",
	} {
		if got := hostPlatform(goos); got != want {
			t.Errorf("hostPlatform(%q) = %q, want %q", goos, got, want)
		}
	}
	if got, want := HostPlatform(), hostPlatform(runtime.GOOS); got != want {
		t.Errorf("HostPlatform() = %q, want %q", got, want)
	}
	if hostPlatform("freebsd").Valid() {
		t.Error("freebsd is valid")
	}
}
