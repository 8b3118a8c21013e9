package sim

import (
	"testing"
	"time"
)

func TestWorkloadSmall(t *testing.T) {
	wl := Workload{Seed: 7, Services: 100, Duration: 24 * time.Hour, JobEvery: 3 * time.Hour, JobLength: 10 * time.Minute}
	res, err := wl.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Admitted == 0 || res.Rejected != 0 || res.Starts == 0 {
		t.Errorf("workload: %+v", res)
	}
	again, _ := wl.Run()
	if again != res {
		t.Errorf("same seed, different runs: %+v vs %+v", res, again)
	}
}

// BenchmarkWorkload runs the 10,000-service, 7-day workload once per
// iteration and reports engine events per second.
func BenchmarkWorkload(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := DefaultWorkload.Run()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Events)/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(res.Events), "events")
	}
}

// BenchmarkWorkloadDay is a day of 2,000 services: the workload's profile
// in seconds rather than BenchmarkWorkload's minute.
func BenchmarkWorkloadDay(b *testing.B) {
	wl := DefaultWorkload
	wl.Services, wl.Duration = 2000, 24*time.Hour
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := wl.Run()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Events)/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(res.Events), "events")
	}
}

// TestWorkloadAllocations bounds the allocations per event of the workload
// svcsim bench runs: they were most of its cost beyond the engine's (2.30
// per event when each op, timer, cancel and completion was boxed anew;
// 0.64 with the engine's effects in reused storage and the fake
// executor's completions reused).
func TestWorkloadAllocations(t *testing.T) {
	const most = 0.8
	wl := DefaultWorkload
	wl.Services, wl.Duration = 200, 24*time.Hour
	var events int
	allocs := testing.AllocsPerRun(1, func() {
		res, err := wl.Run()
		if err != nil {
			t.Fatal(err)
		}
		events = res.Events
	})
	per := allocs / float64(events)
	t.Logf("%d events, %.0f allocations, %.2f per event", events, allocs, per)
	if per > most {
		t.Errorf("%.2f allocations per event, want at most %.1f", per, most)
	}
}
