package nodeconfig

import (
	"os"
	"os/user"
	"runtime"

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
	}
}
