package modules

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestJDK: the jdk probe is healthy with the version `java -version`
// reports, unhealthy below min_version, and read-only.
func TestJDK(t *testing.T) {
	need(t, "default-jre-headless", "/usr/bin/java")
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("java -version: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`version "([^"]+)"`).FindSubmatch(out)
	if want == nil {
		t.Fatalf("no version in %s", out)
	}
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "jdk", "jdk", m, "")
			n.op("jdk", "fingerprint") // svcrun creates the module data dir
			fp := n.fingerprintReadOnly("jdk")
			if !fp.Healthy || fp.Attrs["version"] != string(want[1]) {
				t.Errorf("fingerprint %+v, want healthy with version %s", fp, want[1])
			}
			old := newNode(t, "jdk", "jdk", m, "min_version = 999")
			if fp := old.op("jdk", "fingerprint"); fp.Healthy || fp.Message == "" {
				t.Errorf("min_version 999: %+v, want unhealthy with a message", fp)
			}
		})
	}
}
