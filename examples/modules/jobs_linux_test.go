package modules

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/testhost"
)

// serve runs a real `svcrun serve` of the node until the test ends, when
// it is stopped with the services it started. Its only reap rounds are
// those the test asks for: a periodic round could destroy a job's object
// before the test has seen it.
func (n *node) serve(t *testing.T) {
	t.Helper()
	cfg, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg, append([]byte("reap_period_s = 86400\n"), cfg...), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(svcrunBin, "serve", "--config", n.cfg, "--stop-services-on-exit", "--log-format", "text")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	logged := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		up := false
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if !up && strings.Contains(sc.Text(), "API listening") {
				up = true
				close(listening)
			}
		}
		logged <- all.String()
	}()
	// Wait only once the log is read to its end: it closes the pipe.
	type exit struct {
		err error
		log string
	}
	exited := make(chan exit, 1)
	go func() {
		log := <-logged
		exited <- exit{cmd.Wait(), log}
	}()
	select {
	case <-listening:
	case e := <-exited:
		t.Fatalf("svcrun serve exited before it listened: %v\n%s", e.err, e.log)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("svcrun serve did not listen within 60 s\n%s", (<-exited).log)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		var e exit
		select {
		case e = <-exited:
		case <-time.After(120 * time.Second):
			cmd.Process.Kill()
			e = <-exited
		}
		if t.Failed() {
			t.Logf("svcrun serve (%v):\n%s", e.err, e.log)
		}
		// A stop that failed leaves no daemon behind either.
		for _, p := range n.processes() {
			pid, _, _ := strings.Cut(p, ":")
			if id, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(id, syscall.SIGKILL)
			}
		}
		// The containers svcrun serve left (empty once its services
		// stopped) under the base of the node's own id: no other svcrun's.
		testhost.RemoveBase(t, n.id)
	})
}

// svcrun runs a svcrun command against the node's serve and returns its
// stdout; it fails the test when the command fails.
func (n *node) svcrun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(svcrunBin, args...)
	// svcrun run writes its services file in <temp dir>/svcrun-services-<uid>,
	// where a user's runs write theirs: the tests' go to their own
	// directory. Only svcrun's TMPDIR: the nodes' data dirs stay short,
	// as the daemons' Unix socket paths under them must be.
	cmd.Env = append(os.Environ(), "TMPDIR="+runtimeDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("svcrun %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// job is an example's job and the object it leaves.
type job struct {
	capability string
	// svc is the service whose object the job makes; "" when it makes none.
	svc string
	// object is the id of the object the job makes for attempt.
	object func(attempt string) string
	// check looks at what the job printed.
	check func(t *testing.T, out string)
	// exe is the job's executable in the bundle, run as it is; "" is
	// job.sh, run with sh.
	exe string
}

// runJob runs the example's job (job.sh, or j.exe) as a user does, with
// `svcrun run --capability`, against a real svcrun serve: the job finds everything in
// $OARBANK_SERVICES_FILE. Its object is then listed with the three labels,
// and once the lease has ended `svcrun reap` destroys it.
func runJob(t *testing.T, n *node, bundle string, j job) {
	n.serve(t)
	// A round already under way when svcrun started is over when this
	// returns.
	n.svcrun(t, "reap", "--config", n.cfg)
	command := []string{"sh", "job.sh"}
	if j.exe != "" {
		command = []string{j.exe}
	}
	script, err := filepath.Abs(filepath.Join(bundle, command[len(command)-1]))
	if err != nil {
		t.Fatal(err)
	}
	command[len(command)-1] = script
	const attempt = "jobtest-1"
	out := n.svcrun(t,
		append([]string{"run", "--config", n.cfg, "--capability", j.capability, "--attempt", attempt, "--"}, command...)...)
	if j.check != nil {
		j.check(t, out)
	}
	if j.svc == "" {
		return
	}
	id := j.object(attempt)
	want := map[string]string{"oarbank.attempt_id": attempt, "oarbank.node": n.id,
		"oarbank.service": n.module + "/" + j.svc}
	found := false
	for _, o := range n.op(j.svc, "list_owned").Objects {
		if o.ID != id {
			continue
		}
		found = true
		for k, v := range want {
			if o.Labels[k] != v {
				t.Errorf("object %s: label %s = %q, want %q", id, k, o.Labels[k], v)
			}
		}
	}
	if !found {
		t.Fatalf("list_owned lacks the job's object %s; the job said:\n%s", id, out)
	}

	var r api.ReapResult
	if err := json.Unmarshal([]byte(n.svcrun(t, "reap", "--config", n.cfg, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	destroyed := false
	for _, s := range r.Services {
		for _, o := range s.Objects {
			if s.Service == want["oarbank.service"] && o.ID == id {
				destroyed = o.Outcome == "destroyed" && o.Attempt == attempt
			}
		}
	}
	if !destroyed {
		t.Errorf("reap %+v: want %s destroyed", r, id)
	}
	for _, o := range n.op(j.svc, "list_owned").Objects {
		if o.ID == id {
			t.Errorf("%s still listed after reap", id)
		}
	}
}

// TestRedisJob: redis/job.sh reaches redis through the services file and
// sets a labelled key, which reap destroys once its attempt has ended.
func TestRedisJob(t *testing.T) {
	need(t, "redis-server", "/usr/bin/redis-server", "/usr/bin/redis-cli")
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "redis", "redis", m, "maxmemory_mb = 32, databases = 4")
			runJob(t, n, "redis", job{
				capability: "redis",
				svc:        "redis",
				object:     func(a string) string { return "job-" + a },
				check: func(t *testing.T, out string) {
					if !strings.Contains(out, "hello from jobtest-1") {
						t.Errorf("job said %q, want the greeting it stored", out)
					}
				},
			})
		})
	}
}

// TestPostgresJob: postgres/job.sh reaches postgres through the services
// file and creates a database labelled in its comment, which reap drops
// once its attempt has ended.
func TestPostgresJob(t *testing.T) {
	need(t, "postgresql", "/usr/lib/postgresql/*/bin/postgres", "/usr/bin/psql")
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "postgres", "postgres", m, "")
			runJob(t, n, "postgres", job{
				capability: "postgres",
				svc:        "postgres",
				object:     func(a string) string { return "job_" + a },
			})
		})
	}
}

// TestKVFileJob: kvfile/job.sh reaches kvfile through the services file
// and makes a bucket, which reap removes once its attempt has ended.
func TestKVFileJob(t *testing.T) {
	need(t, "curl", "/usr/bin/curl")
	bundle := kvfileBundle(t)
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, bundle, "kvfile", m, "max_buckets = 3")
			// The job is the repository's: it reads the file with
			// sdk/sh/svcrun.sh, next to it.
			runJob(t, n, "kvfile", job{
				capability: "kvfile",
				svc:        "kv",
				object:     func(a string) string { return "job-" + a },
				check: func(t *testing.T, out string) {
					if !strings.Contains(out, "hello from jobtest-1") {
						t.Errorf("job said %q, want the greeting it stored", out)
					}
				},
			})
		})
	}
}

// TestJDKJob: jdk/job.sh runs the java the probe found, of the version in
// the probe's attrs, all read from the services file.
func TestJDKJob(t *testing.T) {
	need(t, "default-jre-headless", "/usr/bin/java")
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "jdk", "jdk", m, "")
			runJob(t, n, "jdk", job{
				capability: "jdk",
				check: func(t *testing.T, out string) {
					if !strings.Contains(out, "at /usr/bin/java on node "+n.id) {
						t.Errorf("job said %q, want the java and the node of the services file", out)
					}
				},
			})
		})
	}
}

// TestDemoJob: demo/job.sh finds the demo's objects directory in the
// services file and makes a labelled object there, which reap removes once
// its attempt has ended. In best_effort only: the job runs as the test's
// user (root in CI), whose object a run_as op could not remove.
func TestDemoJob(t *testing.T) {
	n := newNode(t, "demo", "demo", mode{"best_effort", "best_effort", ""}, "slots = 2")
	runJob(t, n, "demo", job{
		capability: "kv",
		svc:        "kv",
		object:     func(a string) string { return "job-" + a },
	})
}
