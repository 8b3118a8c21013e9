package nodeconfig

import (
	"net"
	"regexp"
	"strconv"
	"sync"

	"github.com/oarbank/svcrun/internal/tomldoc"
)

// Defaults of [memory_pressure]: the shares of the last 10 s (percent) in
// which some task, or every non-idle task at once, waited for memory.
const (
	DefaultPressureSomeAvg10 = 20.0
	DefaultPressureFullAvg10 = 5.0
)

// MemoryPressure is [memory_pressure]: when the host's pressure stall
// information (/proc/pressure/memory) counts as memory pressure.
type MemoryPressure struct {
	// Enabled watches the pressure; false ignores it.
	Enabled bool
	// SomeAvg10 and FullAvg10 are the thresholds, in percent, of the
	// file's some and full avg10: reaching either is pressure.
	SomeAvg10 float64
	FullAvg10 float64
}

// hostRE is a host name as metrics_listen may give it (compiled on first
// use, as nodeIDRE).
var hostRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$`)
})

// parseMetricsListen reads metrics_listen, the TCP address of the
// /metrics listener: "" (absent) for none.
func parseMetricsListen(t *tomldoc.Table) string {
	if !t.Has("metrics_listen") {
		return ""
	}
	addr := t.String("metrics_listen", "")
	if addr == "" {
		if v, _ := t.Raw("metrics_listen"); v == "" {
			t.Errorf("metrics_listen", "must not be empty: leave it out for no /metrics listener")
		} // else not a string: String said why
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("metrics_listen", "%q is not HOST:PORT (such as \"127.0.0.1:9464\", or \"[::1]:9464\" for IPv6)", addr)
		return ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		t.Errorf("metrics_listen", "%q: the port %q must be a number from 0 to 65535", addr, port)
		return ""
	}
	if host != "" && net.ParseIP(host) == nil && !hostRE().MatchString(host) {
		t.Errorf("metrics_listen", "%q: %q is neither an IP address nor a host name", addr, host)
		return ""
	}
	return addr
}

// parsePressure reads [memory_pressure].
func parsePressure(t *tomldoc.Table) MemoryPressure {
	p := MemoryPressure{
		Enabled:   t.Bool("enabled", true),
		SomeAvg10: percent(t, "some_avg10", DefaultPressureSomeAvg10),
		FullAvg10: percent(t, "full_avg10", DefaultPressureFullAvg10),
	}
	t.Close()
	return p
}

// percent reads a threshold in percent: more than 0, at most 100.
func percent(t *tomldoc.Table, key string, def float64) float64 {
	v := t.Number(key, def)
	if !t.Has(key) || !isNumber(t, key) {
		return v
	}
	if v <= 0 || v > 100 {
		t.Errorf(key, "must be more than 0 and at most 100 (percent), got %v: to ignore memory pressure, set enabled = false",
			v)
		return def
	}
	return v
}
