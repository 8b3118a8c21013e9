package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// DefaultConfig is the node configuration `svcrun serve` reads without
// --config: the one the Debian package installs.
const DefaultConfig = "/etc/svcrun/svcrun.toml"

// notifier sends systemd's service notifications (sd_notify(3)): one
// datagram per message to $NOTIFY_SOCKET, a path or, starting with '@', an
// abstract socket name. Without $NOTIFY_SOCKET (not started by systemd as
// Type=notify) it sends nothing.
type notifier struct {
	addr string
}

// newNotifier reads $NOTIFY_SOCKET. It is not unset: svcrun's ops get a
// clean environment of their own (executor), so nothing inherits it.
func newNotifier() notifier {
	return notifier{addr: os.Getenv("NOTIFY_SOCKET")}
}

// send sends msg (newline-separated VAR=VALUE lines) in one datagram.
func (n notifier) send(msg string) error {
	if n.addr == "" {
		return nil
	}
	name := n.addr
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify systemd at %s: %w", n.addr, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("notify systemd at %s: %w", n.addr, err)
	}
	return nil
}

// reloading is the RELOADING=1 message; systemd 253 and later want the
// CLOCK_MONOTONIC time with it, to tell this reload's READY=1 from an
// earlier one's.
func reloading() string {
	msg := "RELOADING=1"
	if us, ok := monotonicUsec(); ok {
		msg += "\nMONOTONIC_USEC=" + strconv.FormatInt(us, 10)
	}
	return msg
}

// watchdogInterval is how often to send WATCHDOG=1: half the
// $WATCHDOG_USEC that systemd sets with WatchdogSec=, as sd_watchdog_enabled(3)
// advises, and 0 when there is no watchdog or it is another process's
// ($WATCHDOG_PID).
func watchdogInterval() (time.Duration, error) {
	v := os.Getenv("WATCHDOG_USEC")
	if v == "" {
		return 0, nil
	}
	if p := os.Getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	us, err := strconv.ParseInt(v, 10, 64)
	if err != nil || us <= 0 {
		return 0, fmt.Errorf("$WATCHDOG_USEC %q: not a positive number of microseconds", v)
	}
	return time.Duration(us) * time.Microsecond / 2, nil
}
