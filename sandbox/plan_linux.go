package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// systemDirs are read and executed by every op; those that do not exist
// are skipped.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// devices are opened as files, read and written, by every op.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom"}

func plan(cfg *nodeconfig.Config, mod *manifest.Module, mc nodeconfig.Module, f facts) (*Plan, error) {
	p := &Plan{Module: mod.Name, Mode: cfg.Sandbox, Network: mod.Sandbox.Network}
	if p.Network == "" {
		p.Network = manifest.NetworkHost
	}
	var err error
	if p.Rules, p.Notes, err = rulesOf(cfg, mod, mc); err != nil {
		return nil, fmt.Errorf("sandbox: module %q: %w", mod.Name, err)
	}
	missing := func(l Layer, format string, args ...any) {
		p.Missing = append(p.Missing, Missing{l, fmt.Sprintf(format, args...)})
	}

	if f.landlock < 1 {
		missing(LayerLandlock, "%s: the op's filesystem is not confined", f.landlockReason)
	} else {
		p.Landlock = f.landlock
		if f.landlock < 3 {
			missing(LayerTruncate, "Landlock ABI %d < 3 (Linux 6.2): the op can truncate files it may only read", f.landlock)
		}
		if f.landlock < 6 {
			missing(LayerScope, "Landlock ABI %d < 6 (Linux 6.12): the op can connect to the abstract Unix sockets "+
				"of processes outside its sandbox (with network \"host\": the host's, such as an old containerd-shim's)",
				f.landlock)
		}
	}
	if f.nnpReason != "" {
		missing(LayerNoNewPrivs, "%s", f.nnpReason)
	}

	const sameUser = "an op can then signal svcrun (SIGKILL ends it) and read svcrun's environment in " +
		"/proc/<svcrun>/environ: Landlock stops neither for the op's own user (the svcrun thread that forks the " +
		"op shares its domain; Landlock guards only attaching to a process outside it)"
	switch {
	case f.euid == 0 && cfg.RunAs == "":
		missing(LayerRunAs, "svcrun runs as root and run_as is not set: ops run as root; %s", sameUser)
	case f.euid == 0:
		if p.RunAs, err = lookupAccount(cfg.RunAs); err != nil {
			return nil, fmt.Errorf("sandbox: module %q: %w", mod.Name, err)
		}
	case cfg.RunAs != "":
		missing(LayerRunAs, "svcrun runs as uid %d, not root, so it cannot run ops as run_as %q: they run as "+
			"svcrun's own user; %s", f.euid, cfg.RunAs, sameUser)
	default:
		missing(LayerRunAs, "ops run as svcrun's own user (uid %d); %s; run svcrun as root with run_as", f.euid, sameUser)
	}

	switch {
	case f.landlock >= 9: // LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	case p.RunAs == nil:
		missing(LayerUnixSockets,
			"Landlock ABI %d < 9 (Linux 7.1) does not confine connect(2) to pathname Unix sockets, and ops run as "+
				"svcrun's own user: svcrun's socket %s and any container runtime socket svcrun's user can open are "+
				"reachable", f.landlock, cfg.Socket)
	default:
		open, notes := restrictGroups(p.RunAs, socketsOf(cfg))
		p.Notes = append(p.Notes, notes...)
		if len(open) > 0 {
			missing(LayerUnixSockets,
				"Landlock ABI %d < 9 (Linux 7.1) does not confine connect(2) to pathname Unix sockets, and run_as %q "+
					"can write %s", f.landlock, p.RunAs.Name, join(open))
		}
	}

	if p.Network == manifest.NetworkNone {
		if f.netnsReason != "" {
			missing(LayerNetNS, "network = \"none\" but %s: the op has the host's network", f.netnsReason)
		} else {
			p.NetNS = true
		}
	}
	return p, nil
}

// rulesOf returns the Landlock rules of mod, with its paths' symbolic links
// resolved, and refuses rules that would reach what no op may.
func rulesOf(cfg *nodeconfig.Config, mod *manifest.Module, mc nodeconfig.Module) ([]Rule, []string, error) {
	var (
		rules []Rule
		notes []string
	)
	seen := map[Rule]bool{}
	add := func(path string, a Access, what string) {
		r := Rule{Path: path, Access: a, What: what}
		if k := (Rule{Path: path, Access: a}); !seen[k] {
			seen[k] = true
			rules = append(rules, r)
		}
	}
	// absent are the grants not made because their path does not exist
	// yet, resolved by name: what they would reach once it does is checked
	// like a rule, so a link to a device the host lacks today is refused as
	// it would be on a host that has it.
	var absent []Rule
	// grant resolves p, or notes that it is absent (and so not granted).
	grant := func(p string, a Access, what string) error {
		r, err := filepath.EvalSymlinks(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			notes = append(notes,
				fmt.Sprintf("%s %s does not exist: not granted until it does and the module's sandbox is set up again "+
					"(reload)", what, p))
			absent = append(absent, Rule{Path: resolveByName(p), Access: a, What: what})
			return nil
		case err != nil:
			return fmt.Errorf("%s %s: %w", what, p, err)
		}
		add(r, a, what)
		return nil
	}
	for _, d := range systemDirs {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			add(r, ReadExec, "system")
		}
	}
	bundle, err := filepath.EvalSymlinks(mod.Dir)
	if err != nil || !filepath.IsAbs(bundle) {
		return nil, nil, fmt.Errorf("the bundle %q: %v", mod.Dir, err)
	}
	add(bundle, ReadExec, "bundle")
	add("/proc", ReadOnly, "proc")
	for _, d := range devices {
		if err := grant(d, Device, "device"); err != nil {
			return nil, nil, err
		}
	}
	add(resolveByName(cfg.ModuleDataDir(mod.Name)), ReadWrite, "data dir")
	for _, g := range mc.Grants.Write {
		if err := grant(g, ReadWrite, "write grant"); err != nil {
			return nil, nil, err
		}
	}
	for _, g := range mc.Grants.Read {
		if err := grant(g, ReadOnly, "read grant"); err != nil {
			return nil, nil, err
		}
	}
	names := make([]string, 0, len(mc.Tools))
	for n := range mc.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := grant(mc.Tools[n], ReadExec, "tool "+n); err != nil {
			return nil, nil, err
		}
	}

	state, sock := resolveByName(cfg.DataDir), resolveByName(cfg.Socket)
	for _, r := range append(slices.Clip(rules), absent...) {
		if what, reason := manifest.Forbidden(r.Path); what != "" {
			return nil, nil, fmt.Errorf("%s %s reaches %s (%s), which is never granted", r.What, r.Path, what, reason)
		}
		if r.What != "data dir" && manifest.ContainsPath(r.Path, state) {
			return nil, nil, fmt.Errorf(
				"%s %s contains svcrun's data dir %s (svcrun's state and every module's data): move the data dir out "+
					"of it", r.What, r.Path, state)
		}
		if manifest.ContainsPath(r.Path, sock) {
			return nil, nil, fmt.Errorf("%s %s contains svcrun's socket %s: move the socket out of it", r.What, r.Path, sock)
		}
		if r.Access == ReadWrite && manifest.ContainsPath(r.Path, bundle) {
			return nil, nil, fmt.Errorf(
				"%s %s contains the module's bundle %s: its ops could rewrite their own executables", r.What, r.Path, bundle)
		}
	}
	return rules, notes, nil
}

// resolveByName resolves the symbolic links of the clean absolute path p
// as far as its elements exist, following a link whose target is missing by
// the target's name: what p would be once everything it names exists. A
// loop of links is left as it stands after 255 hops, as the kernel's
// ELOOP would.
func resolveByName(p string) string {
	p = filepath.Clean(p)
hop:
	for hops := 0; hops < 255; hops++ {
		done := "/"
		var rest []string
		if p != "/" {
			rest = strings.Split(p[1:], "/")
		}
		for i, elem := range rest {
			next := filepath.Join(done, elem)
			fi, err := os.Lstat(next)
			if err != nil {
				return p // missing (or unreadable): the rest is taken as named
			}
			if fi.Mode().Type() == fs.ModeSymlink {
				target, err := os.Readlink(next)
				if err != nil {
					return p
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(done, target)
				}
				p = filepath.Join(append([]string{target}, rest[i+1:]...)...)
				continue hop
			}
			done = next
		}
		return p
	}
	return p
}

// socketsOf lists the pathname Unix sockets no op may connect to that exist
// on this host: svcrun's own, and those of the container runtimes.
func socketsOf(cfg *nodeconfig.Config) []string {
	var out []string
	for _, pat := range append([]string{cfg.Socket}, manifest.ForbiddenPaths()...) {
		matches, _ := filepath.Glob(pat)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().Type() == fs.ModeSocket && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// restrictGroups drops from a's supplementary groups root's group and every
// group that could write one of sockets (connect(2) needs write
// permission), and returns the sockets a can still write (as their owner,
// through its primary group, or as others) and notes of what it dropped.
func restrictGroups(a *Account, sockets []string) (open, notes []string) {
	if i := slices.Index(a.Groups, 0); i >= 0 {
		a.Groups = slices.Delete(a.Groups, i, i+1)
		notes = append(notes, fmt.Sprintf("run_as %q: group 0 (root) dropped", a.Name))
	}
	for _, s := range sockets {
		var st unix.Stat_t
		if err := unix.Stat(s, &st); err != nil {
			continue
		}
		uid, gid, mode := int(st.Uid), int(st.Gid), st.Mode
		switch {
		case uid == a.UID:
			if mode&0o200 != 0 {
				open = append(open, fmt.Sprintf("%s (its owner)", s))
			}
			continue
		case gid == a.GID:
			if mode&0o020 != 0 {
				open = append(open, fmt.Sprintf("%s (its primary group %d)", s, gid))
			}
			continue
		}
		if i := slices.Index(a.Groups, gid); i >= 0 {
			if mode&0o020 == 0 {
				continue // the group's bits apply, and deny
			}
			a.Groups = slices.Delete(a.Groups, i, i+1)
			notes = append(notes, fmt.Sprintf("run_as %q: supplementary group %d dropped: it can connect to %s", a.Name, gid, s))
		}
		if mode&0o002 != 0 {
			open = append(open, fmt.Sprintf("%s (mode %#o: everyone)", s, mode&0o777))
		}
	}
	return open, notes
}

func join(list []string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	s := list[0]
	for _, e := range list[1 : len(list)-1] {
		s += ", " + e
	}
	return s + " and " + list[len(list)-1]
}
