// Command testimage is the one binary of podmantest's test image: a
// static helper whose first argument says what a test's container does.
//
//	sleep SECONDS   sleeps, then exits 0
//	print TEXT...   writes TEXT to stdout and "err: TEXT" to stderr
//	exit N          exits with status N
//	alloc MB        allocates and touches MB megabytes, then sleeps
//	fork N          starts N children that sleep; exits 3 when one fails
//	env             prints its arguments, working directory, uid and environment
//	listen PORT     answers one TCP connection on PORT with "hello from the listener"
//	connect ADDR    prints what the listener at ADDR (host:port) says; refused, tries again for 60 s
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: testimage sleep|print|exit|alloc|fork|env|listen|connect ...")
	}
	arg := func() int {
		if len(os.Args) < 3 {
			fail(os.Args[1] + ": missing its number")
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fail(os.Args[1] + ": " + err.Error())
		}
		return n
	}
	switch os.Args[1] {
	case "sleep":
		time.Sleep(time.Duration(arg()) * time.Second)
	case "print":
		text := strings.Join(os.Args[2:], " ")
		fmt.Println(text)
		fmt.Fprintln(os.Stderr, "err: "+text)
	case "exit":
		os.Exit(arg())
	case "alloc":
		n := arg()
		chunks := make([][]byte, 0, n)
		for range n {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1 // touched, so that it is resident
			}
			chunks = append(chunks, b)
		}
		fmt.Printf("allocated %d MB\n", len(chunks))
		time.Sleep(time.Hour)
	case "fork":
		n := arg()
		for i := range n {
			c := exec.Command("/testimage", "sleep", "3600")
			if err := c.Start(); err != nil {
				fmt.Printf("fork %d failed: %v\n", i, err)
				os.Exit(3)
			}
		}
		fmt.Printf("forked %d\n", n)
	case "env":
		wd, _ := os.Getwd()
		fmt.Printf("args=%s\nwd=%s\nuid=%d\n", strings.Join(os.Args[2:], " "), wd, os.Getuid())
		env := os.Environ()
		sort.Strings(env)
		for _, e := range env {
			fmt.Println("env " + e)
		}
	case "listen":
		l, err := net.Listen("tcp", ":"+strconv.Itoa(arg()))
		if err != nil {
			fail(err.Error())
		}
		fmt.Println("listening on", l.Addr())
		c, err := l.Accept()
		if err != nil {
			fail(err.Error())
		}
		fmt.Fprintln(c, "hello from the listener")
		c.Close()
	case "connect":
		if len(os.Args) < 3 {
			fail("connect: missing its address")
		}
		// The listener may not listen yet (refused): 60 s is only the cutoff.
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", os.Args[2], 5*time.Second)
			if err == nil {
				b, err := io.ReadAll(c)
				if err != nil {
					fail(err.Error())
				}
				fmt.Print(string(b))
				return
			}
			if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
				fail(err.Error())
			}
			time.Sleep(100 * time.Millisecond)
		}
	default:
		fail("unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "testimage: "+msg)
	os.Exit(2)
}
