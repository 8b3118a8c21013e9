package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
)

func TestEventLog(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	a := &Agent{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, slow := a.Subscribe(ctx, time.Time{}, 0) // never read until the end
	for i := range keptRecords + 10 {
		a.publish(at(i), engine.Note{Subject: "x", Text: fmt.Sprint(i)})
	}

	past, _ := a.Subscribe(ctx, time.Time{}, 0)
	if len(past) != 0 {
		t.Errorf("a zero since gave %d past records", len(past))
	}
	past, _ = a.Subscribe(ctx, at(keptRecords+5), 0)
	if len(past) != 5 || !strings.HasSuffix(past[0].Text, fmt.Sprint(keptRecords+5)) ||
		!strings.HasSuffix(past[4].Text, fmt.Sprint(keptRecords+9)) {
		t.Errorf("since: %d records %+v", len(past), past)
	}
	past, _ = a.Subscribe(ctx, time.Time{}, 2) // last alone: the last two kept
	if len(past) != 2 || !strings.HasSuffix(past[1].Text, fmt.Sprint(keptRecords+9)) {
		t.Errorf("last 2 without since: %+v", past)
	}
	past, _ = a.Subscribe(ctx, at(100), 3)
	if len(past) != 3 || !strings.HasSuffix(past[2].Text, fmt.Sprint(keptRecords+9)) {
		t.Errorf("last 3: %+v", past)
	}
	// The first 10 were evicted: asking for them says so first.
	past, _ = a.Subscribe(ctx, at(0), 0)
	if len(past) != keptRecords+1 || past[0].Kind != "truncated" || !past[0].At.Equal(at(9)) ||
		!strings.HasSuffix(past[1].Text, "10") {
		t.Errorf("evicted: %d records, first %+v, second %+v", len(past), past[0], past[1])
	}

	// The slow reader got the first subscriberBuffer records; the rest were
	// lost to it, and it is told how many once it has room.
	for i := range subscriberBuffer {
		r := <-slow
		if want := fmt.Sprint(i); !strings.HasSuffix(r.Text, want) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	a.publish(at(keptRecords+10), engine.Note{Subject: "x", Text: "next"})
	if r := <-slow; r.Kind != "lost" || !strings.HasPrefix(r.Text, fmt.Sprintf("%d records lost",
		keptRecords+10-subscriberBuffer)) {
		t.Errorf("after the loss: %+v", r)
	}
	if r := <-slow; !strings.HasSuffix(r.Text, "next") {
		t.Errorf("then: %+v", r)
	}
}

func TestSubscribeEndsWithContext(t *testing.T) {
	a := &Agent{}
	ctx, cancel := context.WithCancel(context.Background())
	_, live := a.Subscribe(ctx, time.Time{}, 0)
	cancel()
	for range live { // closed once ctx is done
	}
	a.publish(time.Now(), engine.Note{Text: "after"}) // no reader left: no panic
	a.events.mu.Lock()
	n := len(a.events.subs)
	a.events.mu.Unlock()
	if n != 0 {
		t.Errorf("%d readers left", n)
	}
}
