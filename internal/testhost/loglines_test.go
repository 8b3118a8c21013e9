package testhost

import (
	"testing"
)

// TestLogLines writes a log the way a pipe delivers it: lines split
// across writes and several lines in one write.
func TestLogLines(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		texts  []string
		want   int
	}{
		{"one line a write", []string{"a=1 API listening\n", "b=2\n"}, []string{"API listening"}, 1},
		{"a line in two writes", []string{"a=1 API lis", "tening\n"}, []string{"API listening"}, 1},
		{"two lines in one write", []string{"x level=WARN\ny level=WARN\n"}, []string{"level=WARN"}, 2},
		{"texts on one line only", []string{"first\nsecond\n"}, []string{"first", "second"}, 0},
		{"an unfinished line is not counted", []string{"done\n", "half"}, []string{"half"}, 0},
		{"every line", []string{"a\nb\n", "c\n"}, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLogLines(t)
			for _, w := range tt.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := l.Count(tt.texts...); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.texts, got, tt.want)
			}
		})
	}
}

// TestLogLinesWakesAWaiter waits for lines that another goroutine writes
// after the wait began.
func TestLogLinesWakesAWaiter(t *testing.T) {
	l := NewLogLines(t)
	l.Write([]byte("ready\n"))
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		l.WaitForMore(1, "ready")
	}()
	<-started
	l.Write([]byte("rea"))
	l.Write([]byte("dy again\n"))
	<-done
	if n := l.Count("ready"); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}
