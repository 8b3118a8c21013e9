// Package podmantest runs podman for tests: its API service on a socket
// of its own, with a configuration, storage and state of its own under a
// temporary directory (the host's podman, its containers, images and
// settings are never touched), a test image built offline, and Fake, a
// server answering the libpod subset from responses recorded on podman
// 4.3.1 for tests that need no podman.
//
// A test binary shares one service among its tests when its TestMain calls
// Main; each test's containers carry a label of the test's own
// (Runtime.Labels), and the containers carrying it are removed when the
// test ends.
package podmantest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestLabel is the label that marks a container as made by one test; its
// value is unique to the test.
const TestLabel = "svcrun.test"

// Runtime is a running podman API service, as one test sees it.
type Runtime struct {
	Socket string
	Client *podman.Client
	// Labels are the labels of this test's containers: the ones a test
	// creates carry them, so that they are removed when it ends.
	Labels map[string]string

	svc *service
}

// service is one `podman system service` with its directory.
type service struct {
	dir     string
	runRoot string // under dir, or a directory of its own where dir is too long
	socket  string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	log     string
	// mntNS is the service's mount namespace ("mnt:[N]"), by which stop
	// finds what the service left running: conmon and the exit command it
	// runs when a container ends (`podman container cleanup`) outlive the
	// service and write its storage while it is removed. Empty where it is
	// not a namespace of its own.
	mntNS string

	mu    sync.Mutex
	image string // the test image's reference, once imported
}

// shared is the service of a test binary whose TestMain calls Main: the
// one state of this package, as a test binary is the unit a service
// serves (starting podman costs seconds, a test milliseconds).
var labelSeq atomic.Int64

var shared struct {
	inMain bool
	once   sync.Once
	svc    *service
	err    error
	skip   string
}

// Main runs the tests of m with one podman service for all of them, started
// by the first test that calls Start and stopped when the tests end. Call
// it from TestMain: os.Exit(podmantest.Main(m)).
func Main(m *testing.M) int {
	shared.inMain = true
	code := m.Run()
	if shared.svc != nil {
		if err := shared.svc.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "podmantest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the podman service of the test binary (started now if it
// is the first test to ask), or a service of the test's own when TestMain
// does not call Main. Where podman or what it needs is missing, the test
// is skipped (failed with REQUIRE_KERNEL_FEATURES=1).
func Start(t testing.TB) *Runtime {
	t.Helper()
	var svc *service
	if shared.inMain {
		shared.once.Do(func() { shared.svc, shared.skip, shared.err = startService(false) })
		if shared.skip != "" {
			testhost.SkipOrFail(t, shared.skip)
		}
		if shared.err != nil {
			t.Fatal(shared.err)
		}
		svc = shared.svc
	} else {
		svc = ownService(t, false)
	}
	return newRuntime(t, svc)
}

// StartOwnNetwork returns a podman service of the test's own in a network
// namespace of its own, for tests of the bridge network: its bridge,
// firewall rules, forwarding and address allocations are that
// namespace's and its own, never the host's. Where netavark or iptables,
// which podman's bridge needs, are not installed, the test is skipped
// (also with REQUIRE_KERNEL_FEATURES=1: they are packages, not kernel
// features); where the kernel gives no network namespace, skipped or
// failed as Start does.
func StartOwnNetwork(t testing.TB) *Runtime {
	t.Helper()
	if !netavarkInstalled() {
		t.Skip("podman's bridge network needs netavark, not installed (apt-get install netavark)")
	}
	if !lookPath("iptables") {
		t.Skip("podman's bridge network needs iptables, not installed (apt-get install iptables)")
	}
	return newRuntime(t, ownService(t, true))
}

// ownService starts a service for t alone, stopped when it ends.
func ownService(t testing.TB, ownNetwork bool) *service {
	t.Helper()
	s := startOrSkip(t, ownNetwork)
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// startOrSkip starts a service for t, which stops it; where podman or
// what it needs is missing, t is skipped (failed with
// REQUIRE_KERNEL_FEATURES=1).
func startOrSkip(t testing.TB, ownNetwork bool) *service {
	t.Helper()
	s, skip, err := startService(ownNetwork)
	if skip != "" {
		testhost.SkipOrFail(t, skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newRuntime(t testing.TB, svc *service) *Runtime {
	t.Helper()
	rt := &Runtime{
		Socket: svc.socket,
		Client: podman.New(svc.socket),
		Labels: map[string]string{TestLabel: labelValue(t.Name())},
		svc:    svc,
	}
	rt.RemoveAtCleanup(t, rt.Labels)
	return rt
}

// RemoveAtCleanup removes, when the test ends, every container carrying
// labels (as List matches them): the containers a test makes through
// something else than its own calls (a broker labels its own).
func (rt *Runtime) RemoveAtCleanup(t testing.TB, labels map[string]string) {
	t.Helper()
	if len(labels) == 0 {
		t.Fatal("podmantest: RemoveAtCleanup with no labels would remove every container")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cs, err := rt.Client.List(ctx, labels)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		for _, c := range cs {
			if err := rt.Client.Remove(ctx, c.ID); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}

// Spec returns s with the test's labels added, so that the container is
// removed when the test ends.
func (rt *Runtime) Spec(s podman.Spec) podman.Spec {
	l := make(map[string]string, len(s.Labels)+len(rt.Labels))
	for k, v := range s.Labels {
		l[k] = v
	}
	for k, v := range rt.Labels {
		l[k] = v
	}
	s.Labels = l
	return s
}

// startService starts `podman system service` on a socket of its own, with
// a configuration of its own, and waits until it answers. skip says what
// is missing on this host.
//
// With ownNetwork it runs in a network namespace of its own too, with
// tmpfs over the host's directories of podman's network state
// (/run/containers, where netavark keeps its address allocations, and
// /run/netns): its networks are its own.
func startService(ownNetwork bool) (svc *service, skip string, err error) {
	bin, err := exec.LookPath("podman")
	if err != nil {
		return nil, "podman is not installed (apt-get install podman)", nil
	}
	if os.Geteuid() != 0 {
		return nil, "podmantest runs podman as root", nil
	}
	dir, err := os.MkdirTemp("", "podmantest-")
	if err != nil {
		return nil, "", err
	}
	svc = &service{dir: dir, socket: filepath.Join(dir, "podman.sock"), log: filepath.Join(dir, "service.log")}
	if svc.runRoot, err = runRoot(dir); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	cfg, err := hostConfig(dir)
	if err != nil {
		svc.removeDirs()
		return nil, "", err
	}
	if cfg.skip != "" {
		svc.removeDirs()
		return nil, cfg.skip, nil
	}
	if err := cfg.write(dir, svc.runRoot); err != nil {
		svc.removeDirs()
		return nil, "", err
	}
	logf, err := os.Create(svc.log)
	if err != nil {
		svc.removeDirs()
		return nil, "", err
	}
	defer logf.Close()
	// The service runs in a mount namespace of its own (private, as Go
	// makes it), with a tmpfs over the image blob cache that podman keeps
	// at /var/lib/containers/cache for root whatever its storage is set
	// to: its imports would write the host's cache otherwise. The shell
	// mounts it and becomes podman (exec), so the pid is podman's.
	script := `mount -t tmpfs -o size=64m,mode=0700 podmantest "$1" && exec "$2" system service --time=0 "unix://$3"`
	unshare := uintptr(syscall.CLONE_NEWNS)
	if ownNetwork {
		script = `mkdir -p /run/containers /run/netns && ` +
			`mount -t tmpfs -o size=16m,mode=0755 podmantest /run/containers && ` +
			`mount -t tmpfs -o size=16m,mode=0755 podmantest /run/netns && ` + script
		unshare |= syscall.CLONE_NEWNET
	}
	cmd := exec.Command("/bin/sh", "-c", script, "sh", cacheMountpoint(), bin, svc.socket)
	cmd.Env = append(os.Environ(),
		"CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "storage.conf"),
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// conmon, started by the service, writes its OOM marker ("oom") into
	// its working directory, the service's: this one, not the test's.
	cmd.Dir = dir
	// Its own process group: a ^C of the test does not reach it first,
	// and its stop below is by its pid.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Unshareflags: unshare}
	if err := cmd.Start(); err != nil {
		svc.removeDirs()
		if ownNetwork && (errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EPERM)) {
			return nil, fmt.Sprintf("no network namespace of its own for podman: %v", err), nil
		}
		return nil, "", fmt.Errorf("podmantest: start %s: %w", bin, err)
	}
	svc.cmd = cmd
	svc.exited = make(chan struct{})
	go func() { cmd.Wait(); close(svc.exited) }()
	// Unshareflags apply before the exec that Start waits for: the pid's
	// namespace is already the service's.
	ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
	if own, _ := os.Readlink("/proc/self/ns/mnt"); ns != own {
		svc.mntNS = ns
	}
	if err := svc.waitReady(60 * time.Second); err != nil {
		svc.stop()
		return nil, "", err
	}
	if cfg.nofile != 0 {
		if err := svc.checkLimits(cfg); err != nil {
			svc.stop()
			return nil, "", err
		}
	}
	return svc, "", nil
}

// waitReady waits until the service answers a ping; bound is only the
// failure's cutoff.
func (s *service) waitReady(bound time.Duration) error {
	c := podman.New(s.socket)
	deadline := time.Now().Add(bound)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("podmantest: podman system service exited before answering (%v); its log:\n%s",
				s.cmd.ProcessState, s.tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("podmantest: podman system service did not answer on %s within %v: %v; its log:\n%s", s.socket,
				bound, err, s.tail())
		}
	}
}

func (s *service) tail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// checkLimits checks that the ulimits the configuration gives containers
// are the service's own: a container's runtime sets them, and without
// CAP_SYS_RESOURCE it may not raise one above the limit it inherits.
func (s *service) checkLimits(cfg config) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", s.cmd.Process.Pid))
	if err != nil {
		return err
	}
	want := map[string]uint64{"Max open files": cfg.nofile, "Max processes": cfg.nproc}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		for name, v := range want {
			if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 && f[1] != strconv.FormatUint(v, 10) {
					return fmt.Errorf(
						"podmantest: podman system service runs with %s %s, not the %d its containers.conf gives containers "+
							"(without CAP_SYS_RESOURCE they must match)", name, f[1], v)
				}
			}
		}
	}
	return nil
}

// stop removes the service's containers, stops it by its pid and removes
// its directory.
func (s *service) stop() error {
	var errs []error
	select {
	case <-s.exited:
		errs = append(errs,
			fmt.Errorf("podmantest: podman system service exited before the tests ended (%v); its log:\n%s",
				s.cmd.ProcessState, s.tail()))
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c := podman.New(s.socket)
		cs, err := c.List(ctx, nil)
		if err != nil {
			errs = append(errs, err)
		}
		for _, ct := range cs {
			if err := c.Remove(ctx, ct.ID); err != nil {
				errs = append(errs, err)
			}
		}
		cancel()
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if err := s.endLeftovers(); err != nil {
		errs = append(errs, err)
	}
	// The storage's mounts were the service's namespace's: gone with it.
	if err := s.removeDirs(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// endLeftovers kills what still runs in the service's mount namespace once
// the service has exited, and waits until none of it runs: a container's
// exit command started as the service stopped would otherwise recreate
// directories of the storage while removeDirs empties it.
func (s *service) endLeftovers() error {
	if s.mntNS == "" {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := s.inNamespace()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("podmantest: processes %v of the podman service's namespace %s outlive a SIGKILL by 30 s",
				left, s.mntNS)
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inNamespace lists the processes in the service's mount namespace. An
// exited one (a zombie) has no namespace left, and so is not listed.
func (s *service) inNamespace() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if ns, _ := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); ns == s.mntNS {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeDirs removes the service's directory and its run root.
func (s *service) removeDirs() error {
	var errs []error
	for _, d := range []string{s.runRoot, s.dir} {
		if d == "" {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("podmantest: %w", err))
		}
	}
	return errors.Join(errs...)
}

// maxRunRoot is the longest run root podman 4.3 takes as a flag. The
// exit command conmon runs when a container ends, `podman --runroot R
// container cleanup ID`, names it, and with a longer one fails at once
// ("the specified runroot is longer than 50 characters"): the container
// then stays "stopped" instead of "exited", and every wait for it answers
// only after podman's 20 s allowance for a conmon that died. A test
// binary's temporary directory (svcrun's tests set TMPDIR) easily makes
// dir/runroot longer.
const maxRunRoot = 50

// runRoot makes the service's run root: dir/runroot where that is short
// enough for podman, otherwise a directory of its own under /run or /tmp.
func runRoot(dir string) (string, error) {
	if r := filepath.Join(dir, "runroot"); len(r) <= maxRunRoot {
		if err := os.Mkdir(r, 0o700); err != nil {
			return "", fmt.Errorf("podmantest: %w", err)
		}
		return r, nil
	}
	var errs []error
	for _, base := range []string{"/run", "/tmp"} {
		r, err := os.MkdirTemp(base, "podmantest-run-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(r) > maxRunRoot {
			os.Remove(r)
			errs = append(errs, fmt.Errorf("%s: longer than %d characters", r, maxRunRoot))
			continue
		}
		return r, nil
	}
	return "", fmt.Errorf(
		"podmantest: no run root of at most %d characters, which podman 4.3's container cleanup needs: %w",
		maxRunRoot, errors.Join(errs...))
}

// labelValue is the test's name, kept to the characters a label filter
// takes as they are, and a suffix unique to this process and call.
func labelValue(name string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, name)
	return fmt.Sprintf("%s-%d-%d", clean, os.Getpid(), labelSeq.Add(1))
}

// cacheMountpoint is where the service's tmpfs hides podman's system blob
// cache: the cache's directory, or the nearest of its parents that
// exists (a mount needs an existing directory, and making one would
// change the host).
func cacheMountpoint() string {
	for _, d := range []string{"/var/lib/containers/cache", "/var/lib/containers", "/var/lib"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return "/var"
}

// netavarkInstalled says whether netavark is where podman looks for its
// helpers.
func netavarkInstalled() bool {
	dirs := []string{"/usr/local/libexec/podman", "/usr/local/lib/podman", "/usr/libexec/podman", "/usr/lib/podman"}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, "netavark")); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
