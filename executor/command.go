package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// command is how to start one service or probe of a loaded module: the
// manifest's exec rules applied once.
type command struct {
	// Path is exec[0] with symlinks resolved; it lies inside the bundle.
	Path string
	// Arg0 is argv[0]: exec[0] joined to the bundle root, unresolved, so a
	// symlinked multi-call binary still sees the name it was called by.
	Arg0 string
	// Args are exec[1:].
	Args []string
	// Dir is the bundle root, the working directory of every op.
	Dir string
}

// resolveCommand applies the exec rules to exec (a service's or probe's) in
// the loaded module mod: exec[0] is resolved inside mod.Dir and must still be
// a regular executable file there. manifest.Load checked all this already;
// it is checked again because the bundle may have changed since.
func resolveCommand(mod *manifest.Module, exec []string) (command, error) {
	if len(exec) == 0 {
		return command{}, fmt.Errorf("module %q: empty exec", mod.Name)
	}
	if mod.Dir == "" || !filepath.IsAbs(mod.Dir) {
		return command{}, fmt.Errorf(
			"module %q: the bundle root %q is not an absolute path (load the manifest with manifest.Load)", mod.Name, mod.Dir)
	}
	arg0 := filepath.Join(mod.Dir, filepath.FromSlash(exec[0]))
	path, err := filepath.EvalSymlinks(arg0)
	if err != nil {
		return command{}, fmt.Errorf("module %q: exec %q: %w", mod.Name, exec[0], err)
	}
	rel, err := filepath.Rel(mod.Dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return command{}, fmt.Errorf(
			"module %q: exec %q resolves to %s, outside the bundle %s", mod.Name, exec[0], path, mod.Dir)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return command{}, fmt.Errorf("module %q: exec %q: %w", mod.Name, exec[0], err)
	case !fi.Mode().IsRegular():
		return command{}, fmt.Errorf("module %q: exec %q is not a regular file", mod.Name, exec[0])
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return command{}, fmt.Errorf("module %q: exec %q is not executable (mode %v)", mod.Name, exec[0], fi.Mode().Perm())
	}
	return command{Path: path, Arg0: arg0, Args: exec[1:], Dir: mod.Dir}, nil
}

// spec returns the Spec of op with its arguments: argv is exec, then the op,
// then args (for destroy: the object id, then --force).
func (c command) spec(op protocol.Op, args []string, env []string, timeout time.Duration) Spec {
	a := make([]string, 0, len(c.Args)+1+len(args))
	a = append(a, c.Args...)
	a = append(a, string(op))
	a = append(a, args...)
	return Spec{Path: c.Path, Arg0: c.Arg0, Args: a, Dir: c.Dir, Env: env, Timeout: timeout}
}

// opTimeout is the timeout of op: the spec's default, except start, which
// gets the service's start_timeout_s (startTimeout, when positive).
func opTimeout(op protocol.Op, startTimeout time.Duration) time.Duration {
	if op == protocol.OpStart && startTimeout > 0 {
		return startTimeout
	}
	return protocol.DefaultTimeout(op)
}
