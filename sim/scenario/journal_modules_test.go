package scenario

import (
	"strings"
	"testing"
)

// journalModules is a module db whose reload adds a manual service.
const journalModules = `node id=n1 fingerprint=30s
module
[module]
name = "db"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 5
end
module later
[module]
name = "db"
version = "2"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 9
[[services]]
name = "vm"
exec = ["bin/vm"]
lifecycle = "manual"
capabilities = ["vm"]
end
behaviour db/kv ready_after_polls=1 op=start duration=1s
`

// TestFromJournalModuleChanges: the journals of module changes the
// explored histories make become scenarios that reproduce them: a removed
// module reloaded, then back with its new manifest; every module removed;
// a reset and an emptied container of a service no manifest loaded yet; a
// manual daemon whose container emptied and that its owner started again
// at the instant of the reload that fingerprints it; a stop lost in a
// restart, whose daemon the boot's fingerprint finds stopped.
func TestFromJournalModuleChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeline string
		want     []string // in the written scenario
	}{
		{"back with a new manifest",
			"at 1s remove db\nat 2s reload db\nat 3s enable db\nat 4s acquire l1 attempt=a1 cap=kv wait=10s\n",
			[]string{"at 2s remove db\n", "at 3s reload db enable\n", "module later\n"}},
		{"new manifest and disabled at once",
			"at 1s acquire l1 attempt=a1 cap=kv wait=10s\nat 3s reload db disable\n",
			[]string{"at 3s reload db disable\n"}},
		{"a service no manifest loaded",
			"behaviour db/vm running\nat 1s reset db/vm\nat 2s crash db/vm\n",
			[]string{"at 1s reset db/vm unknown\n", "at 2s emptied db/vm unknown\n"}},
		{"emptied and started by hand at one instant",
			"behaviour db/vm running\nat 1s reload db\nat 5s crash db/vm\nat 5s owner-start db/vm\nat 5s disable " +
				"db\nat 5s enable db\nat 6s acquire l1 attempt=a1 cap=vm\n",
			[]string{"at 5s owner-start db/vm\n"}},
		{"a stop lost in a restart",
			"behaviour db/kv op=stop duration=3s\nat 1s acquire l1 attempt=a1 cap=kv wait=10s\nat 3s release l1\nat " +
				"9s restart\nat 12s acquire l2 attempt=a2 cap=kv wait=10s\n",
			[]string{"at 9s restart\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse("source.txt", []byte(journalModules+tc.timeline+"run 30s\n"))
			if err != nil {
				t.Fatal(err)
			}
			text, err := FromJournal("svcsim replay", recordJournal(t, sc), JournalWindow{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(text), w) {
					t.Errorf("no %q in the scenario:\n%s", w, text)
				}
			}
		})
	}
}
