package manifest

import (
	"strings"
	"testing"
)

func TestNormalizeImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct{ in, want, err string }{
		{"alpine", "docker.io/library/alpine:latest", ""},
		{"postgres:16", "docker.io/library/postgres:16", ""},
		{"bitnami/redis", "docker.io/bitnami/redis:latest", ""},
		{"docker.io/library/alpine:3", "docker.io/library/alpine:3", ""},
		{"quay.io/org/img", "quay.io/org/img:latest", ""},
		{"localhost/svcrun-test:abc", "localhost/svcrun-test:abc", ""},
		{"registry:5000/a/b:1", "registry:5000/a/b:1", ""},
		{"alpine@" + digest, "docker.io/library/alpine@" + digest, ""},
		{"alpine:3@" + digest, "docker.io/library/alpine:3@" + digest, ""},
		{"Alpine", "", "must be lowercase"},
		{"alpine@sha256:xyz", "", "is not sha256:"},
		{"alpine:", "", "the tag"},
		{"", "", "must be lowercase"},
	} {
		got, err := NormalizeImage(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("NormalizeImage(%q) = %q, %v; want %q, error with %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
