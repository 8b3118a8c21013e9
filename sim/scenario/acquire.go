package scenario

import (
	"strings"

	"github.com/oarbank/svcrun/engine"
)

// parseAcquire reads `acquire LEASE key=value...`: a lease request.
func (p *parser) parseAcquire(in *Input, args []string) error {
	if len(args) < 1 || strings.Contains(args[0], "=") {
		return lineError(p.file, in.Line,
			"usage: at T acquire LEASE attempt=A [job=J] [cap=C,...] [pool=NAME:N,...] [needs=POOL,...] [wait=D] [ttl=D]")
	}
	a := engine.Acquire{Lease: engine.LeaseID(args[0])}
	for _, x := range parseKVs(args[1:]) {
		if x.Flag {
			return lineError(p.file, in.Line, "acquire: %q needs a value (key=value)", x.Key)
		}
		var err error
		switch x.Key {
		case "attempt":
			a.Attempt = x.Value
		case "job":
			a.Job = x.Value
		case "cap":
			a.Capabilities = append(a.Capabilities, splitList(x.Value)...)
		case "needs":
			a.NeedsPools = append(a.NeedsPools, splitList(x.Value)...)
		case "pool":
			var ps map[string]int64
			ps, err = parsePools(x.Value)
			for k, v := range ps {
				if a.Pools == nil {
					a.Pools = map[string]int64{}
				}
				a.Pools[k] += v
			}
		case "wait":
			a.Wait, err = parseDuration(x.Value)
		case "ttl":
			a.TTL, err = parseDuration(x.Value)
		default:
			return lineError(p.file, in.Line, "acquire: unknown key %q; keys: attempt, job, cap, pool, needs, wait, ttl", x.Key)
		}
		if err != nil {
			return lineError(p.file, in.Line, "acquire %s=%s: %v", x.Key, x.Value, err)
		}
	}
	in.ev = a
	return nil
}
