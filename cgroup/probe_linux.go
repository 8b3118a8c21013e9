package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Probe reports what the process container can use on this host, for the
// default base name ("svcrun"). It creates the base cgroup to know whether
// it can, and removes it again if it was not there before.
func Probe() Support { return ProbeWith(Options{}) }

// ProbeWith is Probe for the base cgroup of o (as a Manager of o would
// use). A base it had to create is removed again.
func ProbeWith(o Options) Support {
	s, created := probe(o)
	if created {
		unix.Rmdir(s.Base)
	}
	return s
}

// Files of the cgroup v2 core and of the two limit controllers.
const (
	fileControllers = "cgroup.controllers"
	fileSubtree     = "cgroup.subtree_control"
	fileEvents      = "cgroup.events"
	fileKill        = "cgroup.kill"
	fileFreeze      = "cgroup.freeze"
	fileProcs       = "cgroup.procs"
	fileMemoryMax   = "memory.max"
	filePidsMax     = "pids.max"
)

// limitControllers are the controllers Limits needs, with their file.
var limitControllers = []struct{ name, file string }{{"memory", fileMemoryMax}, {"pids", filePidsMax}}

// probe detects and sets up the base; created says it made the base.
func probe(o Options) (s Support, created bool) {
	fail := func(format string, args ...any) (Support, bool) {
		why := fmt.Sprintf(format, args...)
		s.Containers.Reason = why
		for _, f := range []*Feature{&s.Kill, &s.Freeze, &s.Memory, &s.Pids, &s.MemberExits} {
			if !f.OK && f.Reason == "" {
				f.Reason = "no cgroup v2 process containers"
			}
		}
		return s, created
	}
	mounts, err := locate(o, &s)
	if err != nil {
		return fail("%v", err)
	}
	parent := s.Parent
	var st unix.Statfs_t
	if err := unix.Statfs(parent, &st); err != nil {
		return fail("%s: %v", parent, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fail("%s is not in a cgroup2 file system", parent)
	}
	if data, err := os.ReadFile(filepath.Join(parent, fileControllers)); err == nil {
		s.Controllers = strings.Fields(string(data))
	}

	switch err := unix.Mkdir(s.Base, 0o755); {
	case err == nil:
		created = true
	case errors.Is(err, unix.EEXIST):
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
		return fail("cgroup v2 is not writable here: create %s: %v", s.Base, err)
	default:
		return fail("create %s: %v", s.Base, err)
	}
	if _, err := os.Stat(filepath.Join(s.Base, fileEvents)); err != nil {
		return fail("%s has no %s: %v", s.Base, fileEvents, err)
	}
	s.Containers.OK = true
	s.Kill = fileFeature(s.Base, fileKill, "Linux 5.14", "Kill signals every process of cgroup.procs instead")
	s.Freeze = fileFeature(
		s.Base, fileFreeze, "Linux 5.2", "Freeze and Thaw send SIGSTOP and SIGCONT to every process of cgroup.procs instead")

	// memory and pids: available to the parent, enabled for the base's
	// children by the parent's and the base's subtree_control.
	for _, lc := range limitControllers {
		f := &s.Memory
		if lc.name == "pids" {
			f = &s.Pids
		}
		*f = enableController(s, mounts, lc.name)
	}
	s.MemberExits = pidfdFeature()
	return s, created
}

// Locate is where a Manager of o, in this process or a child of it, puts
// its base cgroup (Support's Mount, Own, Parent and Base), found as Probe
// finds it but without creating or writing anything: for a caller that
// must find a base another svcrun made, such as a test removing what its
// svcrun left.
func Locate(o Options) (Support, error) {
	var s Support
	_, err := locate(o, &s)
	return s, err
}

// locate fills s's Mount, Own, Parent and Base for o and returns the
// mounts it read; an error says why there is no base to be had.
func locate(o Options, s *Support) ([]mountEntry, error) {
	name, err := o.baseName()
	if err != nil {
		return nil, err
	}
	mounts, merr := readMountinfo()
	parent := o.Parent
	if parent == "" {
		if merr != nil {
			return nil, fmt.Errorf("read /proc/self/mountinfo: %v", merr)
		}
		m := cgroup2Mount(mounts)
		if m == nil {
			return nil, errors.New("no cgroup2 mount in /proc/self/mountinfo (a cgroup v1 only host)")
		}
		s.Mount = m.point
		own, err := ownCgroup()
		if err != nil {
			return nil, err
		}
		s.Own = own
		rel := own
		if m.root != "/" { // a bind mount of a subtree
			if r, ok := strings.CutPrefix(own, m.root); ok && (r == "" || r[0] == '/') {
				rel = r
			} else {
				return nil, fmt.Errorf("svcrun's cgroup %s is outside the cgroup2 mount %s (root %s)", own, m.point, m.root)
			}
		}
		parent = filepath.Join(m.point, rel)
	} else {
		parent = filepath.Clean(parent)
		for i := range mounts {
			if mounts[i].fstype == "cgroup2" && within(parent, mounts[i].point) && len(mounts[i].point) > len(s.Mount) {
				s.Mount = mounts[i].point
			}
		}
	}
	s.Parent = parent
	s.Base = filepath.Join(parent, name)
	return mounts, nil
}

// fileFeature is the Feature of a core file of the base.
func fileFeature(base, file, since, fallback string) Feature {
	if _, err := os.Stat(filepath.Join(base, file)); err != nil {
		return Feature{Reason: fmt.Sprintf("no %s (%s or later): %s", file, since, fallback)}
	}
	return Feature{OK: true}
}

// enableController enables ctrl in the subtree_control of the parent and of
// the base, where it is available, and says why not otherwise.
func enableController(s Support, mounts []mountEntry, ctrl string) Feature {
	if !slices.Contains(s.Controllers, ctrl) {
		why := fmt.Sprintf("the %s controller is not available to %s (not in its %s)", ctrl, s.Parent, fileControllers)
		for _, m := range mounts {
			if m.fstype == "cgroup" && slices.Contains(strings.Split(m.superOpts, ","), ctrl) {
				why = fmt.Sprintf("the %s controller is bound to the cgroup v1 hierarchy at %s, not to cgroup v2", ctrl, m.point)
				return Feature{Reason: why}
			}
		}
		if s.Mount != "" && s.Parent != s.Mount {
			data, err := os.ReadFile(filepath.Join(s.Mount, fileControllers))
			if err == nil && slices.Contains(strings.Fields(string(data)), ctrl) {
				why = fmt.Sprintf(
					"the %s controller is not delegated to svcrun's cgroup %s (enable it in its parent's subtree_control, e.g. "+
						"systemd Delegate=yes)", ctrl, s.Own)
			}
		}
		return Feature{Reason: why}
	}
	for _, dir := range []string{s.Parent, s.Base} {
		if err := enableIn(dir, ctrl); err != nil {
			why := fmt.Sprintf("enable %s in %s: %v", ctrl, filepath.Join(dir, fileSubtree), err)
			if dir == s.Parent && errors.Is(err, unix.EBUSY) {
				why += fmt.Sprintf(
					" (svcrun's cgroup holds processes, svcrun among them: a cgroup with processes cannot enable controllers for "+
						"its children; run svcrun in a delegated cgroup where it is alone, e.g. systemd Delegate=yes, with %s as a "+
						"leaf)", s.Parent)
			}
			return Feature{Reason: why}
		}
	}
	return Feature{OK: true}
}

// enableIn writes "+ctrl" to dir's subtree_control unless it is there.
func enableIn(dir, ctrl string) error {
	file := filepath.Join(dir, fileSubtree)
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(string(data)), ctrl) {
		return nil
	}
	return writeFile(file, "+"+ctrl)
}

// writeFile writes one value to a cgroup file, in one write(2).
func writeFile(file, value string) error {
	fd, err := unix.Open(file, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, []byte(value))
		if err != unix.EINTR {
			return err
		}
	}
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	root, point, fstype, superOpts string
}

func readMountinfo() ([]mountEntry, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parseMountinfo(data), nil
}

// parseMountinfo parses mountinfo lines:
// id parent major:minor root point options [optional...] - fstype source super.
func parseMountinfo(data []byte) []mountEntry {
	var out []mountEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+3 {
			continue
		}
		e := mountEntry{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: f[sep+1]}
		if len(f) > sep+3 {
			e.superOpts = f[sep+3]
		}
		out = append(out, e)
	}
	return out
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroup2Mount picks the cgroup2 mount: /sys/fs/cgroup when it is one, else
// the first.
func cgroup2Mount(mounts []mountEntry) *mountEntry {
	var first *mountEntry
	for i := range mounts {
		m := &mounts[i]
		if m.fstype != "cgroup2" {
			continue
		}
		if m.point == "/sys/fs/cgroup" {
			return m
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// ownCgroup is svcrun's cgroup v2 path, the "0::/path" line of
// /proc/self/cgroup.
func ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	return parseOwnCgroup(data)
}

func parseOwnCgroup(data []byte) (string, error) {
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			p = strings.TrimSuffix(p, " (deleted)")
			if !strings.HasPrefix(p, "/") {
				return "", fmt.Errorf("/proc/self/cgroup: unexpected cgroup v2 path %q", p)
			}
			return p, nil
		}
	}
	return "", errors.New("/proc/self/cgroup has no cgroup v2 line (0::/path): svcrun is not in a cgroup v2 hierarchy")
}

// pidfdFeature says whether processes can be watched by pidfds (Linux 5.3).
func pidfdFeature() Feature {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return Feature{Reason: fmt.Sprintf(
			"pidfd_open (Linux 5.3): %v; a master that dies while its workers live on is seen by the next status", err)}
	}
	unix.Close(fd)
	return Feature{OK: true}
}
