package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/protocol"
)

// Status is a check's verdict.
type Status string

// The verdicts.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Report is what Check found: one Result per check of each service and
// probe checked.
type Report struct {
	Module string `json:"module"`
	// DataDir is the module data dir the ops ran with.
	DataDir string `json:"data_dir"`
	// Containers is how the services' processes were contained: "cgroup",
	// or "process-group: " and why not (probes always are).
	Containers string `json:"containers"`
	// SandboxMissing are the sandbox layers the ops ran without.
	SandboxMissing []string `json:"sandbox_missing"`
	Results        []Result `json:"checks"`
	// Leftovers are what the cleanup could not remove.
	Leftovers  []string `json:"leftovers,omitempty"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
	Skipped    int      `json:"skipped"`
	DurationMS float64  `json:"duration_ms"`
}

// OK says every check passed.
func (r *Report) OK() bool { return r.Failed == 0 && r.Skipped == 0 }

// Result is one check of one service or probe.
type Result struct {
	// Target is the service or probe, module/name.
	Target string `json:"target"`
	// Kind is "service" or "probe".
	Kind  string `json:"kind"`
	Check string `json:"check"`
	// Status is pass, fail or skip.
	Status Status `json:"status"`
	// Summary is the evidence in one line.
	Summary    string  `json:"summary"`
	DurationMS float64 `json:"duration_ms"`
	// Ops are the ops the check ran, in order, with their evidence; for
	// output and timeouts, the ops of the target that broke the rule.
	Ops []OpRun `json:"ops"`
	// Job is the job list-owned-labels ran (svcrun check --job).
	Job *JobRun `json:"job,omitempty"`
}

// Name is the check's name with its target, as the text report shows it.
func (r Result) Name() string { return r.Target + " " + r.Check }

// OpRun is the evidence of one op.
type OpRun struct {
	Op   string   `json:"op"`
	Args []string `json:"args,omitempty"`
	// Check is the check that ran the op; "cleanup" for the stops and
	// kills between checks.
	Check string `json:"check"`
	// OK says the op succeeded: exit 0 with a valid document.
	OK bool `json:"ok"`
	// Failure is the engine's kind of failure: failed, protocol, timeout
	// or spawn.
	Failure string   `json:"failure,omitempty"`
	Message string   `json:"message,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// ExitCode is absent when the op could not be started.
	ExitCode   *int    `json:"exit_code,omitempty"`
	Stdout     string  `json:"stdout"`
	StderrTail string  `json:"stderr_tail,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	TimeoutMS  float64 `json:"timeout_ms"`
	// Left, for a stop, are the processes it left in the container,
	// which svcrun killed.
	Left []int `json:"left,omitempty"`
	// PipesHeld says a process the op left (a daemon) still held its
	// stdout or stderr once it exited.
	PipesHeld bool `json:"pipes_held,omitempty"`
	// GroupHeld are the processes the op left in its own process group
	// once it exited: daemons that did not detach with setsid.
	GroupHeld []int    `json:"group_held,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`

	result    protocol.Result
	failure   engine.FailureKind
	groupHeld []proc
}

// Limits of the evidence kept per op: a report stays readable.
const (
	stdoutKept = 4 << 10
	stderrKept = 4 << 10
)

func newOpRun(check string, op protocol.Op, args []string, res executor.Result, out engine.Outcome) OpRun {
	r := OpRun{
		Op: string(op), Args: args, Check: check,
		OK: out.Failure == engine.FailNone, Failure: string(out.Failure), Message: out.Message, Reasons: out.Reasons,
		Stdout:     words.Clip(string(res.Stdout), stdoutKept, "..."),
		StderrTail: words.ClipStart(string(res.StderrTail), stderrKept, "..."),
		DurationMS: ms(res.Duration), TimeoutMS: ms(res.Timeout), Left: res.Left, PipesHeld: res.PipesHeld,
		result: out.Result, failure: out.Failure,
	}
	if res.SpawnErr == nil && res.Pid != 0 {
		code := res.ExitCode
		r.ExitCode = &code
	}
	if r.OK {
		r.Warnings = out.Result.Warnings
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// brief is the op in a few words for a summary: "start 12ms".
func (o OpRun) brief() string {
	name := o.Op
	if len(o.Args) > 0 {
		name += " " + strings.Join(o.Args, " ")
	}
	s := fmt.Sprintf("%s %s", name, fmtMS(o.DurationMS))
	if !o.OK {
		s += " (" + o.Message + ")"
	}
	return s
}

func fmtMS(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.0fms", v)
}
