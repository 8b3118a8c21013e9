package podmantest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// config is what this host needs in the service's containers.conf and
// storage.conf.
type config struct {
	skip    string // what is missing: the tests skip
	runtime string // the OCI runtime's name
	driver  string // the storage driver
	// nofile and nproc, when not 0, are the ulimits containers get: the
	// service's own, where root lacks CAP_SYS_RESOURCE and so cannot
	// raise them to podman's default of 1048576 in a container.
	nofile, nproc uint64
}

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/self/status's CapEff.
const capSysResource = 24

// hostConfig works out the configuration this host needs.
func hostConfig(dir string) (config, error) {
	var cfg config
	// runc where it is installed: crun (1.8, the first runtime podman's
	// package pulls in) refuses a hybrid cgroup layout ("cgroups in hybrid
	// mode not supported"), v1 controllers with cgroup2 mounted beside
	// them; runc runs on every layout.
	switch {
	case lookPath("runc"):
		cfg.runtime = "runc"
	case lookPath("crun") && !hybridCgroups():
		cfg.runtime = "crun"
	case lookPath("crun"):
		cfg.skip = "crun refuses this host's hybrid cgroup layout and runc is not installed (apt-get install runc)"
		return cfg, nil
	default:
		cfg.skip = "neither runc nor crun is installed (apt-get install runc)"
		return cfg, nil
	}
	if !lookPath("conmon") {
		cfg.skip = "conmon is not installed (apt-get install conmon)"
		return cfg, nil
	}
	// An overlay on an overlay (a directory of a container's own root
	// file system) is refused by the kernel: vfs copies instead.
	cfg.driver = "overlay"
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.OVERLAYFS_SUPER_MAGIC {
		cfg.driver = "vfs"
	}
	has, err := hasCap(capSysResource)
	if err != nil {
		return cfg, err
	}
	if !has {
		cfg.nofile, cfg.nproc, err = serviceLimits()
		if err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// serviceLimits are the hard limits of open files and processes the API
// service will run with: podman raises its own open files' soft limit to
// the hard one, and bounds its processes by the kernel's pid_max.
func serviceLimits() (nofile, nproc uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, fmt.Errorf("podmantest: %w", err)
	}
	nofile = rl.Max
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return 0, 0, fmt.Errorf("podmantest: %w", err)
	}
	nproc = rl.Max
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, 0, fmt.Errorf("podmantest: %w", err)
	}
	if pm, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && pm < nproc {
		nproc = pm
	}
	return nofile, nproc, nil
}

// hasCap says whether this process's effective capabilities hold bit.
func hasCap(bit uint) (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("podmantest: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("podmantest: CapEff %q: %w", v, err)
			}
			return caps&(1<<bit) != 0, nil
		}
	}
	return false, fmt.Errorf("podmantest: no CapEff in /proc/self/status")
}

// write writes containers.conf and storage.conf into dir, naming only
// paths under dir and runRoot: the service's storage, state, locks (files,
// not the host's shared-memory segment), events and networks are its own.
func (cfg config) write(dir, runRoot string) error {
	var c strings.Builder
	c.WriteString("# Written by podmantest for one test binary's podman.\n[containers]\n")
	if cfg.nofile != 0 {
		fmt.Fprintf(&c, "default_ulimits = [\"nofile=%d:%d\", \"nproc=%d:%d\"]\n", cfg.nofile, cfg.nofile, cfg.nproc,
			cfg.nproc)
	}
	fmt.Fprintf(&c,
		"\n[engine]\nruntime = %q\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nlock_type = "+
			"\"file\"\ntmp_dir = %q\nstatic_dir = %q\nvolume_path = %q\n",
		cfg.runtime, filepath.Join(dir, "tmp"), filepath.Join(dir, "root", "libpod"), filepath.Join(dir, "root", "volumes"))
	fmt.Fprintf(&c, "\n[network]\nnetwork_config_dir = %q\n", filepath.Join(dir, "networks"))
	s := fmt.Sprintf(
		"# Written by podmantest for one test binary's podman.\n[storage]\ndriver = %q\ngraphroot = %q\nrunroot = %q\n",
		cfg.driver, filepath.Join(dir, "root"), runRoot)
	if err := os.WriteFile(filepath.Join(dir, "containers.conf"), []byte(c.String()), 0o644); err != nil {
		return fmt.Errorf("podmantest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "storage.conf"), []byte(s), 0o644); err != nil {
		return fmt.Errorf("podmantest: %w", err)
	}
	return nil
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// hybridCgroups says whether the host mounts the cgroup v1 controllers
// with a cgroup2 hierarchy beside them (systemd's "hybrid" layout).
func hybridCgroups() bool {
	var root, unified unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &root) == nil && root.Type != unix.CGROUP2_SUPER_MAGIC &&
		unix.Statfs("/sys/fs/cgroup/unified", &unified) == nil && unified.Type == unix.CGROUP2_SUPER_MAGIC
}
