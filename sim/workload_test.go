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
