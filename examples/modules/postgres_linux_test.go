package modules

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPostgres: the postgres module through its lifecycle; a database
// labelled in its comment is an owned object, and one with a session is
// busy: destroy refuses it without --force and drops it with.
func TestPostgres(t *testing.T) {
	need(t, "postgresql", "/usr/lib/postgresql/*/bin/postgres")
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
	psql := bins[len(bins)-1]
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "postgres", "postgres", m, "")
			sockdir := filepath.Join(n.data, "pg", "run")
			sql := func(t *testing.T, db string, cmds ...string) {
				args := []string{"-X", "-q", "-h", sockdir, "-U", "svcrun", "-d", db, "-v", "ON_ERROR_STOP=1"}
				for _, c := range cmds {
					args = append(args, "-c", c)
				}
				n.run(t, psql, args...)
			}
			owned := func(t *testing.T, db, attempt string) {
				sql(t, "postgres", "CREATE DATABASE "+db,
					"COMMENT ON DATABASE "+db+" IS 'oarbank.attempt_id="+attempt+" oarbank.node="+n.id+
						" oarbank.service=postgres/postgres'")
			}
			runService(t, n, lifecycle{
				svc: "postgres",
				check: func(t *testing.T, n *node, fp result) {
					if fp.Attrs["socket_dir"] != sockdir {
						t.Errorf("fingerprint attrs %v: want socket_dir %s", fp.Attrs, sockdir)
					}
					sql(t, "postgres", "CREATE DATABASE byhand")
					if objs := n.op("postgres", "list_owned").Objects; len(objs) != 0 {
						t.Errorf("list_owned %+v: want no database without labels", objs)
					}
					if rep, _ := n.try("postgres", "destroy", "byhand", "--force"); rep.OK {
						t.Errorf("destroy of a database without labels succeeded")
					}
					owned(t, "busy_a2", "a2")
					session := exec.Command(psql, "-X", "-h", sockdir, "-U", "svcrun", "-d", "busy_a2", "-c", "SELECT pg_sleep(600)")
					if err := session.Start(); err != nil {
						t.Fatal(err)
					}
					defer session.Wait()
					for i := 0; ; i++ {
						var busy bool
						for _, o := range n.op("postgres", "list_owned").Objects {
							busy = busy || (o.ID == "busy_a2" && o.Busy)
						}
						if busy {
							break
						}
						if i == 600 {
							t.Fatal("busy_a2 never listed busy")
						}
						time.Sleep(100 * time.Millisecond)
					}
					if rep, _ := n.try("postgres", "destroy", "busy_a2"); rep.OK ||
						!strings.Contains(rep.Message+rep.StderrTail, "busy") {
						t.Errorf("destroy of a busy database: %+v, want a failure saying busy", rep)
					}
					if r := n.op("postgres", "destroy", "busy_a2", "--force"); !r.Changed {
						t.Errorf("destroy --force: changed false")
					}
				},
				object: func(t *testing.T, n *node, attempt string) string {
					owned(t, "job_"+attempt, attempt)
					return "job_" + attempt
				},
			})
		})
	}
}
