package scenario

import (
	"fmt"
	"strconv"
)

// node reads `node key=value...`: the node's configuration.
func (p *parser) node(line int, args []string) error {
	c := &p.sc.Config
	for _, a := range parseKVs(args) {
		if a.Flag {
			return lineError(p.file, line, "node: %q needs a value (key=value)", a.Key)
		}
		var err error
		switch a.Key {
		case "id":
			c.NodeID = a.Value
		case "platform":
			c.Platform = a.Value
			if a.Value != "linux" && a.Value != "macos" && a.Value != "windows" {
				err = fmt.Errorf("use linux, macos or windows")
			}
		case "budget_gb":
			c.MemoryBudgetGB, err = strconv.ParseFloat(a.Value, 64)
		case "max_ops":
			c.MaxConcurrentOps, err = strconv.Atoi(a.Value)
		case "status":
			c.StatusPeriod, err = parseDuration(a.Value)
		case "watched_status":
			c.WatchedStatusPeriod, err = parseDuration(a.Value)
		case "fingerprint":
			c.FingerprintPeriod, err = parseDuration(a.Value)
		case "reap":
			c.ReapPeriod, err = parseDuration(a.Value)
		case "reap_sweep":
			c.ReapSweepPeriod, err = parseDuration(a.Value)
		case "ready_poll":
			c.ReadyPoll, err = parseDuration(a.Value)
		case "debounce":
			c.DoctorDebounce, err = parseDuration(a.Value)
		case "force_after":
			c.ForceAfter, err = strconv.Atoi(a.Value)
		default:
			return lineError(p.file, line,
				"node: unknown key %q; keys: id, platform, budget_gb, max_ops, status, watched_status, fingerprint, "+
					"reap, reap_sweep, ready_poll, debounce, force_after", a.Key)
		}
		if err != nil {
			return lineError(p.file, line, "node %s=%s: %v", a.Key, a.Value, err)
		}
	}
	return nil
}
