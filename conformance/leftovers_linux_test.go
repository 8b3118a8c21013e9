package conformance

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// leftovers are the living processes whose environment names dataDir as
// their module data dir: what the module's ops left running.
func leftovers(t *testing.T, dataDir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("OARBANK_MODULE_DATA=" + dataDir + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}
