package cgroup

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// onFirstThread runs functions on the process's first thread, which the
// main goroutine holds locked while the tests run on others; nil when the
// main goroutine was not on it.
var onFirstThread chan func()

func TestMain(m *testing.M) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		os.Exit(m.Run())
	}
	onFirstThread = make(chan func())
	go func() { os.Exit(m.Run()) }() // whatever a function keeps running here
	for f := range onFirstThread {
		f()
	}
}

// TestMembersThreadNotTheFirst: the pidfds' thread, started from the
// process's first thread, leaves that thread's descriptor table alone:
// /proc/self/fd, which the sandbox reads back, lists the first thread's.
func TestMembersThreadNotTheFirst(t *testing.T) {
	if onFirstThread == nil {
		t.Skip("the main goroutine was not on the process's first thread")
	}
	f, err := os.Open("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error)
	var w *members
	onFirstThread <- func() {
		w = &members{
			exits: make(chan struct{}, 1), done: make(chan struct{}), byID: map[int32]*container{}, pids: map[int]bool{}}
		if w.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			done <- err
			return
		}
		started := make(chan error, 1)
		go func() { done <- <-started }()
		w.thread(started)
	}
	// Only keeps a lost start from hanging the test.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the pidfds' thread did not start within a minute")
	}
	go func() { // the teller, as New starts it
		for range w.exits {
		}
		close(w.done)
	}()
	defer w.close()
	if _, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err != nil {
		t.Errorf("the first thread's table lost the test's descriptor: %v", err)
	}
}
