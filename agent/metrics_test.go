package agent

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// parseMetrics parses a text exposition with Prometheus' own parser.
func parseMetrics(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser refuses the exposition: %v\n%s", err, text)
	}
	return fams
}

// sample finds the sample of family name whose labels include labels
// (name, value pairs); nil when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a gauge's or counter's value, NaN-free: -1 when missing.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := sample(fams, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return -1
}

func count(fams map[string]*dto.MetricFamily, name string, labels ...string) uint64 {
	return sample(fams, name, labels...).GetHistogram().GetSampleCount()
}

// scrape parses what WriteMetrics writes.
func scrape(t testing.TB, a *Agent) map[string]*dto.MetricFamily {
	t.Helper()
	var b bytes.Buffer
	if err := a.WriteMetrics(context.Background(), &b); err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return parseMetrics(t, b.String())
}

// checkConventions checks Prometheus' naming conventions on every family:
// a help text, counters and only counters ending in _total, base units
// (seconds, bytes) in the names, no svcrun_ family without the prefix.
func checkConventions(t testing.TB, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name, f := range fams {
		if !strings.HasPrefix(name, "svcrun_") {
			t.Errorf("%s: not under the svcrun_ prefix", name)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s: no HELP", name)
		}
		if total := strings.HasSuffix(name, "_total"); total != (f.GetType() == dto.MetricType_COUNTER) {
			t.Errorf("%s: a %v; only counters end in _total, and every counter does", name, f.GetType())
		}
		for _, bad := range []string{"_gb", "_mb", "_kb", "_ms", "_milliseconds", "_minutes"} {
			if strings.Contains(name, bad+"_") || strings.HasSuffix(name, bad) {
				t.Errorf("%s: use base units (seconds, bytes), not %s", name, bad)
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("%s: a histogram of durations is in _seconds", name)
		}
	}
}

// promtoolLint runs `promtool check metrics` on the exposition when
// promtool is there ($PROMTOOL, else on PATH; .ci/run sets PROMTOOL).
func promtoolLint(t testing.TB, text string) {
	t.Helper()
	tool := os.Getenv("PROMTOOL")
	if tool == "" {
		var err error
		if tool, err = exec.LookPath("promtool"); err != nil {
			t.Log("promtool not found ($PROMTOOL, PATH): the exposition is not linted by it")
			return
		}
	}
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestHistogramBuckets(t *testing.T) {
	cases := []struct {
		name string
		obs  []time.Duration
		want []uint64 // cumulative: le 1, le 2, +Inf (the count)
		sum  float64
	}{
		{"none", nil, []uint64{0, 0, 0}, 0},
		{"on a bound counts in that bucket", []time.Duration{time.Second}, []uint64{1, 1, 1}, 1},
		{"between bounds", []time.Duration{1500 * time.Millisecond}, []uint64{0, 1, 1}, 1.5},
		{"over every bound", []time.Duration{time.Minute, time.Millisecond}, []uint64{1, 1, 2}, 60.001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistogram([]float64{1, 2})
			for _, d := range tc.obs {
				h.observe(d)
			}
			var b bytes.Buffer
			x := &expo{w: bufio.NewWriter(&b)}
			x.family("svcrun_x_seconds", "histogram", "x.")
			x.histogram("svcrun_x_seconds", h, "op", "start")
			x.w.Flush()
			got := parseMetrics(t, b.String())["svcrun_x_seconds"].GetMetric()[0].GetHistogram()
			var cum []uint64
			for _, bk := range got.GetBucket() {
				cum = append(cum, bk.GetCumulativeCount())
			}
			if !slices.Equal(cum, tc.want) || got.GetSampleCount() != tc.want[len(tc.want)-1] ||
				math.Abs(got.GetSampleSum()-tc.sum) > 1e-9 {
				t.Errorf("buckets %v sum %v, want %v sum %v\n%s", cum, got.GetSampleSum(), tc.want, tc.sum, b.String())
			}
		})
	}
}

// Label values are escaped as the text format wants (Go's %q would write
// \x and \u escapes, which Prometheus refuses).
func TestLabelEscaping(t *testing.T) {
	for _, v := range []string{`plain`, `a"quote`, `back\slash`, "new\nline", "tab\there", "été ✓", "nul\x00byte"} {
		var b bytes.Buffer
		x := &expo{w: bufio.NewWriter(&b)}
		x.family("svcrun_x", "gauge", "x.")
		x.sample("svcrun_x", 1, "service", v)
		x.w.Flush()
		m := parseMetrics(t, b.String())["svcrun_x"].GetMetric()[0]
		if got := m.GetLabel()[0].GetValue(); got != v {
			t.Errorf("label %q came back as %q from\n%s", v, got, b.String())
		}
	}
}

// The loop's measurements: op durations by op and outcome, lease waits
// by outcome, from the events and effects of its steps.
func TestMetersStep(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Time
		ev      engine.Event
		effects []engine.Effect
	}
	m := newMeters()
	for _, s := range []step{
		{at(0), engine.Acquire{Lease: "l1"}, []engine.Effect{&engine.RunOp{ID: 1, Op: protocol.OpStart}}},
		{at(0), engine.Acquire{Lease: "l2"}, []engine.Effect{engine.Rejected{Lease: "l2"}}}, // refused at once
		{at(0), engine.Acquire{Lease: "l3"}, nil},
		{at(time.Second), engine.Acquire{Lease: "l4"}, nil},
		{at(2 * time.Second), &engine.OpDone{ID: 1}, []engine.Effect{engine.Admitted{Lease: "l1"},
			&engine.RunOp{ID: 2, Op: protocol.OpStatus}}},
		{at(3 * time.Second), engine.Release{Lease: "l3"}, []engine.Effect{engine.Released{Lease: "l3"}}},
		{at(3 * time.Second), engine.Release{Lease: "l1"}, []engine.Effect{engine.Released{Lease: "l1"}}}, // held: not a wait
		{at(8 * time.Second), &engine.OpDone{ID: 2, Outcome: engine.Outcome{Failure: engine.FailTimeout}}, nil},
		{at(9 * time.Second), &engine.OpDone{ID: 99}, nil}, // not started by this svcrun
	} {
		m.step(s.at, s.ev, s.effects)
	}
	hist := func(h *histogram) (uint64, float64) {
		var n uint64
		for _, c := range h.counts {
			n += c
		}
		return n, h.sum
	}
	cases := []struct {
		name string
		h    *histogram
		n    uint64
		sum  float64
	}{
		{"start ok", m.ops[opKey{"start", "ok"}], 1, 2},
		{"status timeout", m.ops[opKey{"status", "timeout"}], 1, 6},
		{"status ok", m.ops[opKey{"status", "ok"}], 0, 0},
		{"admitted", m.leaseWaits["admitted"], 1, 2},
		{"rejected", m.leaseWaits["rejected"], 1, 0},
		{"withdrawn", m.leaseWaits["withdrawn"], 1, 3},
	}
	for _, c := range cases {
		if n, sum := hist(c.h); n != c.n || sum != c.sum {
			t.Errorf("%s: %d observations summing %v s, want %d summing %v s", c.name, n, sum, c.n, c.sum)
		}
	}
	if len(m.waiting) != 1 || !m.waiting["l4"].Equal(at(time.Second)) {
		t.Errorf("waiting %v, want l4 since 1 s", m.waiting)
	}
	if len(m.opStarted) != 0 {
		t.Errorf("ops still started: %v", m.opStarted)
	}
}
