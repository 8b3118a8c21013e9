package module

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Daemon is a long-lived process a service's start leaves behind, known by
// its pid file.
type Daemon struct {
	// PIDFile holds the daemon's pid, in decimal, under the module data
	// dir. Start writes it; a daemon that writes its own (given
	// daemonize-style flags) may share it, as long as it writes the pid
	// Start started: Daemon never forks.
	PIDFile string
	// Path and Args are the program and its arguments (Args excludes the
	// program name).
	Path string
	Args []string
	// Env is the daemon's environment; nil is the op's own.
	Env []string
	// Dir is its working directory; "" is the op's (the bundle root).
	Dir string
	// LogFile receives its stdout and stderr, appended; "" discards them.
	// Never the op's own: svcrun would wait for those pipes to close.
	LogFile string
	// Credential, when not nil, is the user and group the daemon runs as
	// (unix; the op must be root): for daemons such as postgres that
	// refuse to run as root.
	Credential *Credential
}

// Credential is an account a daemon is started as.
type Credential struct {
	UID, GID uint32
}

// ErrNotRunning is wrapped by the errors about a daemon that is not
// running when it must be.
var ErrNotRunning = errors.New("daemon not running")

// PID returns the pid of the pid file and whether that process is alive. A
// missing or empty pid file is 0, false and no error; an unreadable or
// garbled one is an error.
func (d Daemon) PID() (int, bool, error) {
	data, err := os.ReadFile(d.PIDFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read pid file: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, false, nil
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, false, fmt.Errorf("pid file %s: %q is not a pid", d.PIDFile, s)
	}
	return pid, alive(pid), nil
}

// Alive reports whether the daemon of the pid file runs; a broken pid file
// reads as not running.
func (d Daemon) Alive() bool {
	_, ok, _ := d.PID()
	return ok
}

// Start starts the daemon unless it is alive already, and reports whether
// it started it. The daemon runs in a session of its own with stdin
// /dev/null and its output in LogFile, and the pid file is written before
// Start returns.
func (d Daemon) Start() (started bool, err error) {
	// A garbled pid file names no daemon: it is replaced.
	if d.Alive() {
		return false, nil
	}
	cmd := exec.Command(d.Path, d.Args...)
	cmd.Env = d.Env
	cmd.Dir = d.Dir
	out, err := openLog(d.LogFile)
	if err != nil {
		return false, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr, err = detached(d.Credential)
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start %s: %w", d.Path, err)
	}
	pid := cmd.Process.Pid
	if err := writeFileAtomic(d.PIDFile, []byte(strconv.Itoa(pid)+"\n")); err != nil {
		// Without its pid file no later op would find it, and the next
		// start would run a second one: it goes.
		_ = kill(pid)
		_, _ = cmd.Process.Wait()
		return false, fmt.Errorf("start %s: its pid file: %w (the daemon was killed)", d.Path, err)
	}
	// The daemon is not waited for: the op exits and svcrun's subreaper
	// (or init) reaps it.
	_ = cmd.Process.Release()
	return true, nil
}

func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the daemon's log: %w", err)
	}
	return f, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// Wait waits until the daemon of the pid file is gone or ctx is done. The
// daemon is not Wait's child, so it looks every few milliseconds.
func (d Daemon) Wait(ctx context.Context) error {
	pid, ok, err := d.PID()
	if err != nil || !ok {
		return err
	}
	return waitGone(ctx, pid)
}

func waitGone(ctx context.Context, pid int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for pid %d to end: %w", pid, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Stop sends SIGTERM to the daemon's process group (its session, since
// Start made it a leader) and waits up to grace for it to end, then sends
// SIGKILL and waits for it again; the pid file is removed. stopped is false
// when it was not running; escalated says SIGKILL was needed.
func (d Daemon) Stop(grace time.Duration) (stopped, escalated bool, err error) {
	pid, ok, _ := d.PID()
	if !ok {
		return false, false, removeIfExists(d.PIDFile)
	}
	if err = terminate(pid); err != nil {
		return false, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	err = waitGone(ctx, pid)
	cancel()
	if err != nil {
		escalated = true
		if err := kill(pid); err != nil {
			return true, true, err
		}
		// SIGKILL cannot be ignored; the bound only guards a process stuck
		// in the kernel (an uninterruptible sleep).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := waitGone(ctx, pid); err != nil {
			return true, true, err
		}
	}
	return true, escalated, removeIfExists(d.PIDFile)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}
