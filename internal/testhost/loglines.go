package testhost

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// LogLines is a log's writer for a test: a slog handler's, or a daemon's
// stderr, which a pipe delivers in chunks that may hold several lines or
// part of one. It keeps every complete line, logs it to the test, and
// wakes whoever waits for a line containing some texts.
type LogLines struct {
	t       testing.TB
	mu      sync.Mutex
	lines   []string
	partial string // the start of a line whose end has not been written yet
	wake    chan struct{}
}

// NewLogLines is an empty log written to t.
func NewLogLines(t testing.TB) *LogLines {
	return &LogLines{t: t, wake: make(chan struct{})}
}

func (l *LogLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := l.partial + string(p)
	complete := strings.Split(text, "\n")
	l.partial = complete[len(complete)-1]
	complete = complete[:len(complete)-1]
	if len(complete) == 0 {
		return len(p), nil
	}
	for _, line := range complete {
		l.t.Log(line)
	}
	l.lines = append(l.lines, complete...)
	close(l.wake)
	l.wake = make(chan struct{})
	return len(p), nil
}

// Count is the number of complete lines containing all of texts.
func (l *LogLines) Count(texts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, s := range texts {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// WaitFor waits for a line containing all of texts.
func (l *LogLines) WaitFor(texts ...string) {
	l.t.Helper()
	l.WaitForMore(0, texts...)
}

// logGuard only ends a wait that would otherwise hang the test; a line
// expected comes long before it.
const logGuard = 60 * time.Second

// WaitForMore waits for more than n lines containing all of texts.
func (l *LogLines) WaitForMore(n int, texts ...string) {
	l.t.Helper()
	guard := time.After(logGuard)
	for {
		l.mu.Lock()
		wake := l.wake
		l.mu.Unlock()
		if l.Count(texts...) > n {
			return
		}
		select {
		case <-wake:
		case <-guard:
			l.t.Fatalf("no log line with %q within %v", texts, logGuard)
		}
	}
}
