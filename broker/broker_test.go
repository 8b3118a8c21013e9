package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
)

const alpine = "docker.io/library/alpine:latest"

type harness struct {
	b    *Broker
	f    *fake
	done chan *engine.OpDone
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{f: newFake(alpine), done: make(chan *engine.OpDone, 16)}
	h.b = New(Config{
		Node: "node-a",
		Containers: nodeconfig.Containers{Enabled: true, Socket: "/run/podman/podman.sock", Max: 4, MemGB: 1, MaxMemGB: 2,
			CPUs: 1, MaxCPUs: 2, Pids: 100, MaxPids: 200, Networks: []string{"none"}, Pull: nodeconfig.PullMissing,
			PullTimeout: time.Minute},
		Approved: map[string]string{alpine: "mod"},
		Runtime:  h.f,
		Post:     func(ev engine.Event) { h.done <- ev.(*engine.OpDone) },
	})
	return h
}

// op runs one op of the broker's service and returns its outcome.
func (h *harness) op(t *testing.T, op protocol.Op, args ...string) engine.Outcome {
	t.Helper()
	h.b.Run(engine.RunOp{ID: 7, Target: Target, Op: op, Args: args, Timeout: time.Minute})
	select {
	case d := <-h.done:
		if d.ID != 7 {
			t.Fatalf("OpDone for op %d, want 7", d.ID)
		}
		return d.Outcome
	case <-time.After(time.Minute):
		t.Fatalf("%s: no OpDone", op)
	}
	return engine.Outcome{}
}

var lease = Lease{ID: "lease-1", Attempt: "att-1", Job: "job-1", Tokens: 1}

func TestCreateLabels(t *testing.T) {
	h := newHarness(t)
	c, err := h.b.Create(context.Background(), lease,
		CreateRequest{Image: "alpine", Command: []string{"true"}, Labels: map[string]string{"team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"oarbank.attempt_id": "att-1", "oarbank.node": "node-a", "oarbank.service": "svcrun/containers",
		"oarbank.lease": "lease-1", "oarbank.module": "mod", "oarbank.job": "job-1", "team": "x",
	}
	got, _ := h.f.Inspect(context.Background(), c.ID)
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if c.State != "running" {
		t.Errorf("state %q, want running", c.State)
	}
	if want := (podman.Limits{MemoryBytes: 1 << 30, MemorySwapBytes: 1 << 30, CPUs: 1, Pids: 100}); got.Limits != want {
		t.Errorf("limits %+v, want the node's defaults %+v", got.Limits, want)
	}
}

func TestCreateRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  CreateRequest
		is   error
		want string
	}{
		{"memory over the maximum", CreateRequest{Image: alpine, MemGB: 3}, errdefs.ErrInvalid,
			"mem_gb: 3 is more than this node's maximum 2 ([containers].max_mem_gb)"},
		{"cpus over the maximum", CreateRequest{Image: alpine, CPUs: 2.5}, errdefs.ErrInvalid,
			"cpus: 2.5 is more than this node's maximum 2 ([containers].max_cpus)"},
		{"pids over the maximum", CreateRequest{Image: alpine, Pids: 201}, errdefs.ErrInvalid,
			"pids: 201 is more than this node's maximum 200 ([containers].max_pids)"},
		{"network not allowed", CreateRequest{Image: alpine, Network: "bridge"}, errdefs.ErrInvalid,
			`network: "bridge" is not allowed on this node: allowed none ([containers].networks)`},
		{"reserved label", CreateRequest{Image: alpine, Labels: map[string]string{"oarbank.node": "x"}},
			errdefs.ErrInvalid, `labels: "oarbank.node": labels starting with "oarbank." are svcrun's`},
		{"unapproved image", CreateRequest{Image: "postgres:16"}, errdefs.ErrForbidden,
			"forbidden: image docker.io/library/postgres:16 is approved for no enabled module; approved: " +
				"docker.io/library/alpine:latest"},
		{"another registry", CreateRequest{Image: "quay.io/library/alpine"}, errdefs.ErrForbidden,
			"forbidden: image quay.io/library/alpine:latest is approved for no enabled module; approved: " +
				"docker.io/library/alpine:latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			_, err := h.b.Create(context.Background(), lease, tc.req)
			if !errors.Is(err, tc.is) || err.Error() != tc.want {
				t.Errorf("error %v, want %q (%v)", err, tc.want, tc.is)
			}
			if ids := h.f.ids(); len(ids) > 0 {
				t.Errorf("containers made: %v", ids)
			}
		})
	}
}

func TestCreateOverTokens(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	two := lease
	two.Tokens = 2
	first, err := h.b.Create(ctx, two, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.b.Create(ctx, two, CreateRequest{Image: alpine}); err != nil {
		t.Fatal(err)
	}
	_, err = h.b.Create(ctx, two, CreateRequest{Image: alpine})
	if !errors.Is(err, errdefs.ErrConflict) ||
		!strings.Contains(err.Error(), "lease lease-1 holds 2 containers token(s) and has 2 container(s) running") {
		t.Fatalf("third create: %v, want a conflict", err)
	}
	// An exited container frees its token.
	h.f.exit(first.ID, 0, false)
	if _, err := h.b.Create(ctx, two, CreateRequest{Image: alpine}); err != nil {
		t.Errorf("create once one exited: %v", err)
	}
	// Another lease's containers do not count.
	other := Lease{ID: "lease-2", Attempt: "att-2", Tokens: 1}
	if _, err := h.b.Create(ctx, other, CreateRequest{Image: alpine}); err != nil {
		t.Errorf("create of another lease: %v", err)
	}
}

func TestCreateLimitsNotApplied(t *testing.T) {
	h := newHarness(t)
	h.f.ignore.Pids = 1
	_, err := h.b.Create(context.Background(), lease, CreateRequest{Image: alpine})
	if err == nil ||
		!strings.Contains(err.Error(), "the runtime did not apply the limits asked: pids 100 asked, 0 applied") {
		t.Fatalf("create: %v, want the limits refused", err)
	}
	if ids := h.f.ids(); len(ids) > 0 || len(h.f.removed) != 1 {
		t.Errorf("containers left %v, removed %v: want the one made removed", ids, h.f.removed)
	}
}

func TestOtherLeasesContainersAreNotFound(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c, err := h.b.Create(ctx, lease, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	other := Lease{ID: "lease-2", Attempt: "att-2", Tokens: 1}
	if err := h.b.Stop(ctx, other, c.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("stop by another lease: %v, want not found", err)
	}
	if err := h.b.Remove(ctx, other, c.ID); err != nil || len(h.f.ids()) != 1 {
		t.Errorf("remove by another lease: %v, containers %v: want nothing done", err, h.f.ids())
	}
	if err := h.b.Remove(ctx, lease, c.ID); err != nil || len(h.f.ids()) != 0 {
		t.Errorf("remove: %v, containers %v", err, h.f.ids())
	}
	if err := h.b.Remove(ctx, lease, c.ID); err != nil {
		t.Errorf("remove again: %v, want none (idempotent)", err)
	}
}

func TestWaitAndList(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c, err := h.b.Create(ctx, lease, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	go h.f.exit(c.ID, 3, true)
	got, err := h.b.Wait(ctx, lease, c.ID)
	if err != nil || got.ExitCode != 3 || !got.OOMKilled || got.State != "exited" {
		t.Fatalf("wait: %+v, %v; want exit 3, OOM killed", got, err)
	}
	if h.b.Stats().OOMKilled != 1 {
		t.Errorf("OOM kills counted %d, want 1", h.b.Stats().OOMKilled)
	}
	list, err := h.b.List(ctx, lease)
	if err != nil || len(list) != 1 || list[0].ID != c.ID {
		t.Errorf("list %+v, %v", list, err)
	}
}

func TestLeaseEndedRemovesItsContainers(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	mine, err := h.b.Create(ctx, lease, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	other := Lease{ID: "lease-2", Attempt: "att-2", Tokens: 1}
	kept, err := h.b.Create(ctx, other, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	h.b.LeaseEnded(lease.ID)
	deadline := time.Now().Add(time.Minute)
	for slices.Contains(h.f.ids(), mine.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the ended lease's container is still there")
		}
		time.Sleep(time.Millisecond)
	}
	if !slices.Contains(h.f.ids(), kept.ID) {
		t.Error("another lease's container was removed")
	}
}

func TestFingerprint(t *testing.T) {
	h := newHarness(t)
	o := h.op(t, protocol.OpFingerprint)
	fp := o.Result.Fingerprint
	if o.Failure != "" || fp == nil || !fp.Healthy || fp.Pools[manifest.ContainersPool] != 4 || fp.Running == nil ||
		!*fp.Running {
		t.Fatalf("fingerprint %+v %+v, want healthy with 4 tokens", o, fp)
	}
	h.f.down = errors.New("podman's API service is not running at /run/podman/podman.sock")
	o = h.op(t, protocol.OpFingerprint)
	fp = o.Result.Fingerprint
	if fp == nil || fp.Healthy || len(fp.Pools) != 0 ||
		!strings.Contains(fp.Message, "not running at /run/podman/podman.sock") || !*fp.Running {
		t.Fatalf("fingerprint with the runtime down %+v, want unhealthy, running, no tokens, the reason", fp)
	}
	if st := h.b.Stats(); st.Healthy || st.Reason == "" {
		t.Errorf("stats %+v, want unhealthy with the reason", st)
	}
	if o := h.op(t, protocol.OpStart); o.Failure != engine.FailOp {
		t.Errorf("start with the runtime down: %+v, want failed", o)
	}
	if o := h.op(t, protocol.OpStatus); o.Result.Status == nil || !o.Result.Status.Running {
		t.Errorf("status with the runtime down: %+v, want running (its containers are left alone)", o)
	}
}

func TestListOwnedAndDestroy(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c, err := h.b.Create(ctx, lease, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	h.f.add(podman.Container{ID: "unlabelled", State: "running", Labels: map[string]string{"x": "y"}})
	foreign := map[string]string{protocol.LabelAttemptID: "att-9", protocol.LabelNode: "node-b",
		protocol.LabelService: FullName}
	h.f.add(podman.Container{ID: "foreign", State: "running", Labels: foreign})
	o := h.op(t, protocol.OpListOwned)
	if o.Failure != "" {
		t.Fatal(o.Message)
	}
	var ids []string
	for _, obj := range o.Result.OwnedList.Objects {
		ids = append(ids, obj.ID)
		if obj.Kind != protocol.KindContainer {
			t.Errorf("kind %q", obj.Kind)
		}
	}
	slices.Sort(ids)
	// The engine's reap rules judge the node; an unlabelled one is never listed.
	if want := []string{c.ID, "foreign"}; !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	if o := h.op(t, protocol.OpDestroy, "foreign", "--force"); o.Failure != engine.FailOp ||
		!strings.Contains(o.Message, "not the broker's on node node-a") {
		t.Errorf("destroy of another node's: %+v, want refused", o)
	}
	if o := h.op(t, protocol.OpDestroy, "unlabelled"); o.Failure != engine.FailOp {
		t.Errorf("destroy of an unlabelled one: %+v, want refused", o)
	}
	if o := h.op(t, protocol.OpDestroy, c.ID); o.Failure != "" || !o.Result.OpResult.Changed {
		t.Errorf("destroy: %+v", o)
	}
	if o := h.op(t, protocol.OpDestroy, c.ID); o.Failure != "" || o.Result.OpResult.Changed {
		t.Errorf("destroy again: %+v, want unchanged", o)
	}
	if ids := h.f.ids(); !slices.Contains(ids, "foreign") || !slices.Contains(ids, "unlabelled") {
		t.Errorf("left %v, want the foreign and unlabelled ones", ids)
	}
}

// TestCreatePullPolicy checks how each pull policy brings an image: an
// image present costs one create and asks no registry unless the policy
// is "always"; "never" refuses an absent one naming it and the policy.
func TestCreatePullPolicy(t *testing.T) {
	const absent = "docker.io/library/absent:latest"
	for _, tc := range []struct {
		name   string
		policy nodeconfig.PullPolicy
		image  string
		calls  map[string]int
		err    string
	}{
		{"missing, present", nodeconfig.PullMissing, alpine, map[string]int{"create": 1}, ""},
		{"missing, absent", nodeconfig.PullMissing, absent, map[string]int{"create": 2, "pull": 1}, ""},
		{"never, present", nodeconfig.PullNever, alpine, map[string]int{"create": 1}, ""},
		{"never, absent", nodeconfig.PullNever, absent, map[string]int{"create": 1},
			`image docker.io/library/absent:latest is not on this node and [containers].pull is "never"`},
		{"always, present", nodeconfig.PullAlways, alpine, map[string]int{"pull": 1, "create": 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.b.cfg.Containers.Pull = tc.policy
			h.b.cfg.Approved[absent] = "mod"
			h.f.registry[alpine], h.f.registry[absent] = true, true
			_, err := h.b.Create(context.Background(), lease, CreateRequest{Image: tc.image})
			if tc.err == "" && err != nil || tc.err != "" &&
				(err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errdefs.ErrNotFound)) {
				t.Fatalf("create: %v, want %q", err, tc.err)
			}
			got := h.f.called()
			delete(got, "inspect")
			if diff := cmp.Diff(tc.calls, got); diff != "" {
				t.Errorf("calls of the runtime (-want +got):\n%s", diff)
			}
			if want := uint64(tc.calls["pull"]); h.b.Stats().Pulls != want {
				t.Errorf("pulls counted %d, want %d", h.b.Stats().Pulls, want)
			}
		})
	}
}

// TestWaitEnded checks that a wait for a container that has ended already
// is answered without waiting at the runtime.
func TestWaitEnded(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c, err := h.b.Create(ctx, lease, CreateRequest{Image: alpine})
	if err != nil {
		t.Fatal(err)
	}
	h.f.exit(c.ID, 4, false)
	h.f.called()
	got, err := h.b.Wait(ctx, lease, c.ID)
	if err != nil || got.ExitCode != 4 || got.State != "exited" {
		t.Fatalf("wait: %+v, %v; want exit 4", got, err)
	}
	if calls := h.f.called(); !cmp.Equal(calls, map[string]int{"inspect": 1}) {
		t.Errorf("calls of the runtime %v, want one inspect", calls)
	}
}
