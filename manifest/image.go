package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// DefaultRegistry is the registry of an image reference that names none,
// written out so that no runtime's short-name search picks another one.
const DefaultRegistry = "docker.io"

var (
	imagePathRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	})
	imageDomainRE = sync.OnceValue(func() *regexp.Regexp {
		const label = `[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?`
		return regexp.MustCompile(`^(?:` + label + `)(?:\.` + label + `)*(?::[0-9]+)?$`)
	})
	imageTagRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	})
	imageDigestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[a-f0-9]{64}$`) })
)

// NormalizeImage writes an image reference in full, registry, path and
// tag (latest when none is given), and its digest when pinned:
// "alpine" is "docker.io/library/alpine:latest". Approvals and requests are
// compared in this form only, so that a short name can never be resolved
// against another registry than the one approved.
func NormalizeImage(ref string) (string, error) {
	rest, digest, pinned := strings.Cut(ref, "@")
	if pinned && !imageDigestRE().MatchString(digest) {
		return "", fmt.Errorf("%q is not a container image reference: "+
			"the digest %q is not sha256: and 64 lowercase hex digits", ref, digest)
	}
	name, tag := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		name, tag = rest[:i], rest[i+1:]
		if !imageTagRE().MatchString(tag) {
			return "", fmt.Errorf("%q is not a container image reference: "+
				"the tag %q is not 1-128 of A-Z, a-z, 0-9, '_', '.' and '-'", ref, tag)
		}
	}
	domain, path := DefaultRegistry, name
	if first, after, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if !imageDomainRE().MatchString(first) {
			return "", fmt.Errorf("%q is not a container image reference: %q is not a registry host", ref, first)
		}
		domain, path = first, after
	}
	if !imagePathRE().MatchString(path) {
		return "", fmt.Errorf("%q is not a container image reference: "+
			"the name %q must be lowercase path components of a-z, 0-9, '.', '_' and '-'", ref, path)
	}
	if domain == DefaultRegistry && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if tag == "" && !pinned {
		tag = "latest"
	}
	out := domain + "/" + path
	if tag != "" {
		out += ":" + tag
	}
	if pinned {
		out += "@" + digest
	}
	return out, nil
}
