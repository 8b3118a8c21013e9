package modules

import (
	"math"
	"path/filepath"
	"testing"
)

// TestRedis: the redis module through its lifecycle; its pool counts the
// free databases and its reserve is its maxmemory; a labelled key is an
// owned object that destroy removes.
func TestRedis(t *testing.T) {
	need(t, "redis-server", "/usr/bin/redis-server", "/usr/bin/redis-cli")
	for _, m := range modes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := newNode(t, "redis", "redis", m, "maxmemory_mb = 32, databases = 4")
			sock := filepath.Join(n.data, "run", "redis.sock")
			runService(t, n, lifecycle{
				svc: "redis",
				check: func(t *testing.T, n *node, fp result) {
					if fp.Attrs["socket"] != sock || fp.Reserve == nil || math.Abs(fp.Reserve.MemGB-32.0/1024) > 1e-6 {
						t.Errorf("fingerprint %+v: want socket %s and 32 MB", fp, sock)
					}
					if fp.Pools["redis-db"] != 3 {
						t.Errorf("pool %d, want 3 free databases", fp.Pools["redis-db"])
					}
					n.run(t, "redis-cli", "-s", sock, "-n", "2", "SET", "k", "v")
					if got := n.op("redis", "fingerprint").Pools["redis-db"]; got != 2 {
						t.Errorf("pool %d with database 2 used, want 2", got)
					}
					n.run(t, "redis-cli", "-s", sock, "HSET", "oarbank:obj:byhand", "oarbank.node", n.id)
					n.run(t, "redis-cli", "-s", sock, "HSET", "oarbank:obj:other-node",
						"oarbank.attempt_id", "a9", "oarbank.node", "node-2", "oarbank.service", "redis/redis")
					if objs := n.op("redis", "list_owned").Objects; len(objs) != 0 {
						t.Errorf("list_owned %+v: want none of the keys not labelled for this node", objs)
					}
				},
				object: func(t *testing.T, n *node, attempt string) string {
					n.run(t, "redis-cli", "-s", sock, "HSET", "oarbank:obj:cache-"+attempt,
						"oarbank.attempt_id", attempt, "oarbank.node", n.id, "oarbank.service", "redis/redis")
					return "cache-" + attempt
				},
			})
		})
	}
}
