package nodeconfig

import (
	"os"
	"os/user"
	"runtime"
	"strconv"

	"github.com/oarbank/svcrun/svcenv"
)

// ThisHost gathers the facts Parse needs from the running machine.
func ThisHost() Host {
	name, _ := os.Hostname()
	return Host{
		Hostname:    name,
		MemoryBytes: physicalMemory(),
		Cores:       runtime.NumCPU(),
		Platform:    string(svcenv.HostPlatform()),
		UserExists: func(n string) bool {
			_, err := user.Lookup(n)
			return err == nil
		},
		GroupID: func(n string) (int, bool) {
			g, err := user.LookupGroup(n)
			if err != nil {
				return 0, false
			}
			gid, err := strconv.Atoi(g.Gid)
			return gid, err == nil
		},
	}
}
