//go:build linux

// Command floor is bench/peers.sh's measure of what no Go client of svcrun
// can go below on this machine: the calls a job's `svcrun run -- true`
// could at best be made of, with nothing else.
//
//	floor exec CMD [ARGS]...                       exec CMD
//	floor acquire SOCKET CAPABILITY CMD [ARGS]...  acquire a lease on
//	    CAPABILITY from the svcrun at SOCKET (one HTTP request on a new
//	    connection, a TTL of 10 s in place of a release), then exec CMD
//
// The second is the floor of a `run` that execs CMD in its own place (no
// fork, no release round trip, no services file, no socket discovery, no
// signal forwarding, no decoding of the grant): any real `run` does more.
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	switch {
	case len(args) >= 2 && args[0] == "exec":
		execve(args[1:])
	case len(args) >= 4 && args[0] == "acquire":
		if err := acquire(args[1], args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "floor: acquire %s: %v\n", args[2], err)
			os.Exit(125)
		}
		execve(args[3:])
	}
	fmt.Fprintln(os.Stderr, "usage: floor exec CMD [ARGS]... | floor acquire SOCKET CAPABILITY CMD [ARGS]...")
	os.Exit(2)
}

func acquire(socket, capability string) error {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	body := `{"capabilities":[` + strconv.Quote(capability) + `],"ttl":"10s","attempt":"floor-` +
		strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + `"}`
	req := "POST /v1/leases HTTP/1.1\r\nHost: svcrun\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := c.Write([]byte(req)); err != nil {
		return err
	}
	// The grant's head comes in the first read; only its status matters.
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) {
		line, _, _ := bytes.Cut(buf[:n], []byte("\r\n"))
		return fmt.Errorf("svcrun answered %q", line)
	}
	return nil
}

func execve(argv []string) {
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = syscall.Exec(path, argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "floor: exec %s: %v\n", argv[0], err)
	os.Exit(127)
}
