package agent

import "sync"

// stopStrays ends, before the engine boots, what an earlier svcrun left
// running in the containers of services and probes this configuration
// does not have (a module or service removed while svcrun was down, which
// nothing would manage or charge): their bundles may be gone with them,
// so there is no stop op to run. Each gets SIGTERM and StrayGrace to end,
// then is killed, all at once; empty containers are removed. Where ops
// run in process groups nothing tells what an earlier svcrun left.
func (a *Agent) stopStrays() {
	if a.containers == nil || a.containers.Err() != nil {
		return
	}
	known := map[string]bool{}
	for _, m := range a.mods {
		for _, s := range m.Manifest.Services {
			known[m.Manifest.Name+"/"+s.Name] = true
		}
		for _, p := range m.Manifest.Probes {
			known[m.Manifest.Name+"/"+p.Name] = true
		}
	}
	strays, err := a.containers.Strays(known)
	if err != nil {
		a.log.Error("cannot list the containers left by an earlier svcrun: what runs in those of removed services stays",
			"error", err)
	}
	var wg sync.WaitGroup
	for _, s := range strays {
		wg.Go(func() {
			procs, _ := a.containers.Procs(s)
			if len(procs) > 0 {
				a.log.Warn("not in the configuration: ending what an earlier svcrun left "+
					"running in its container (SIGTERM, then SIGKILL after the grace)",
					"service", s, "processes", len(procs), "grace", a.opts.StrayGrace)
				killed, err := a.containers.Terminate(s, a.opts.StrayGrace)
				switch {
				case err != nil:
					a.log.Error("not in the configuration: its container could not be emptied", "service", s, "error", err)
					return
				case killed:
					a.log.Warn("not in the configuration: killed, still running after the grace",
						"service", s, "grace", a.opts.StrayGrace)
				default:
					a.log.Info("not in the configuration: ended on SIGTERM", "service", s)
				}
			}
			if err := a.containers.Remove(s); err != nil {
				a.log.Warn("not in the configuration: its container stays", "service", s, "error", err)
			}
		})
	}
	wg.Wait()
}
