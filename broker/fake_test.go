package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
)

// fake is a runtime in memory: containers run until stopped or until
// their exit is set (exit).
type fake struct {
	mu     sync.Mutex
	down   error // every call fails with it
	images map[string]bool
	cs     map[string]*podman.Container
	n      int
	// ignore leaves these limits unapplied, as a runtime ignoring a
	// field it does not know.
	ignore  podman.Limits
	exited  map[string]chan struct{}
	removed []string
	logs    map[string]string
	// registry are the images a pull finds; calls counts the calls of
	// each method.
	registry map[string]bool
	calls    map[string]int
}

func newFake(images ...string) *fake {
	f := &fake{images: map[string]bool{}, cs: map[string]*podman.Container{}, exited: map[string]chan struct{}{},
		logs: map[string]string{}, registry: map[string]bool{}, calls: map[string]int{}}
	for _, i := range images {
		f.images[i] = true
	}
	return f
}

func (f *fake) err() error {
	if f.down != nil {
		return f.down
	}
	return nil
}

func (f *fake) Ping(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "4.3.1", f.err()
}

func (f *fake) Create(ctx context.Context, s podman.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["create"]++
	if err := f.err(); err != nil {
		return "", err
	}
	if !f.images[s.Image] {
		return "", fmt.Errorf("podman create %s: %w", s.Image, podman.ErrNotFound)
	}
	f.n++
	id := fmt.Sprintf("c%062d", f.n)
	l := podman.Limits{MemoryBytes: s.MemoryBytes, MemorySwapBytes: s.MemoryBytes, CPUs: s.CPUs, Pids: s.Pids}
	if f.ignore.Pids != 0 {
		l.Pids = 0
	}
	if f.ignore.MemoryBytes != 0 {
		l.MemoryBytes, l.MemorySwapBytes = 0, 0
	}
	f.cs[id] = &podman.Container{ID: id, Name: "n" + id[len(id)-4:], Image: s.Image, Labels: maps.Clone(s.Labels),
		State: "created", Created: time.Now(), Limits: l}
	f.exited[id] = make(chan struct{})
	return id, nil
}

// add puts a container made elsewhere (another node's, an unlabelled one).
func (f *fake) add(c podman.Container) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cs[c.ID] = &c
	f.exited[c.ID] = make(chan struct{})
}

func (f *fake) get(id string) (*podman.Container, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	c, ok := f.cs[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, podman.ErrNotFound)
	}
	return c, nil
}

func (f *fake) Start(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if err == nil {
		c.State = "running"
	}
	return err
}

func (f *fake) Inspect(ctx context.Context, id string) (podman.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["inspect"]++
	c, err := f.get(id)
	if err != nil {
		return podman.Container{}, err
	}
	return *c, nil
}

func (f *fake) List(ctx context.Context, labels map[string]string) ([]podman.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.err(); err != nil {
		return nil, err
	}
	var out []podman.Container
	for _, c := range f.cs {
		ok := true
		for k, v := range labels {
			if got, has := c.Labels[k]; !has || v != "" && got != v {
				ok = false
			}
		}
		if ok {
			out = append(out, *c)
		}
	}
	return out, nil
}

// exit ends a running container with code.
func (f *fake) exit(id string, code int, oom bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.cs[id]
	c.State, c.ExitCode, c.OOMKilled = "exited", code, oom
	close(f.exited[id])
}

func (f *fake) Wait(ctx context.Context, id string) (int, error) {
	f.mu.Lock()
	f.calls["wait"]++
	c, err := f.get(id)
	ch := f.exited[id]
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return c.ExitCode, nil
}

func (f *fake) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	f.mu.Lock()
	_, err := f.get(id)
	text := f.logs[id]
	f.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}

func (f *fake) Stop(ctx context.Context, id string, timeout time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(id)
	if errors.Is(err, podman.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.State == "running" {
		c.State, c.ExitCode = "exited", 143
		close(f.exited[id])
	}
	return nil
}

func (f *fake) Remove(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.err(); err != nil {
		return err
	}
	if _, ok := f.cs[id]; ok {
		delete(f.cs, id)
		f.removed = append(f.removed, id)
	}
	return nil
}

func (f *fake) Pull(ctx context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["pull"]++
	if !f.registry[ref] {
		return fmt.Errorf("podman pull %s: %w", ref, podman.ErrNotFound)
	}
	f.images[ref] = true
	return nil
}

// called returns the calls counted since the last time, and forgets them.
func (f *fake) called() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = map[string]int{}
	return c
}

// ids lists the containers there are.
func (f *fake) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.cs {
		out = append(out, id)
	}
	return out
}
