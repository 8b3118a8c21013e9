// Package store keeps svcrun's durable state, the leases it admitted and
// the failure records of its services, in one bbolt file (like Nomad's
// client state.db). It is the runtime.Store of svcrun; sim.MemStore is its
// in-memory equivalent.
//
// # Contract
//
// Apply writes one batch of persistence effects (runtime.PutLease,
// runtime.DeleteLease, runtime.PutService) in ONE bbolt read-write
// transaction and returns only once that transaction is committed and
// fsynced (bbolt's default; NoSync is never set). So when Apply returns nil
// the whole batch survives a crash of svcrun or of the machine, and when it
// returns an error, or the process dies before it returns, either the whole
// batch or nothing of it is on disk. This is what the driver contract of
// package runtime needs: a step's persistence effects are durable, in one
// transaction, before anything else of the step is carried out. Any other
// effect type in a batch is a driver bug: Apply refuses the batch and
// writes nothing of it.
//
// State returns everything stored, for runtime.Boot: leases sorted by id,
// services sorted by name (the order of sim.MemStore.State). A record that
// does not decode is an error naming its bucket and key; it is never
// skipped, since a silently forgotten lease would be handed out again.
//
// Open takes an exclusive lock on the file (flock on Unix, LockFileEx on
// Windows) for as long as the DB is open: a second svcrun on the same data
// dir fails after Options.LockTimeout (1 s by default) with an error
// wrapping ErrLocked that says so, with the holder's pid where the OS
// tells it (Linux, /proc/locks). A file that is damaged, is not an svcrun
// state file, or has an unknown schema version is refused (ErrCorrupt,
// ErrNewerVersion), never reset: Open does not write to such a file, so
// nothing already stored is lost, and the error names the file and what to
// do. A DB is safe for use by several goroutines.
//
// # Creation
//
// When the file does not exist, Open creates the directory (mode 0700) if
// it is missing, builds a complete version-1 store in a temporary file
// "<name>.new-*" of the same directory (mode 0600), links it into place
// (never replacing a file that appeared meanwhile) and fsyncs the
// directory. So the state file either does not exist or is a whole,
// versioned store, and its name is durable before the first Apply. A
// leftover "<name>.new-*" file (a crash during the very first creation)
// holds nothing and is removed by the next Open.
//
// # On-disk layout, schema version 1
//
// The file is a bbolt database with three top-level buckets:
//
//	meta      "version" -> ASCII decimal schema version, "1"
//	leases    lease id (runtime.LeaseID, UTF-8) -> JSON of runtime.LeaseRecord
//	services  service name ("module/name")     -> JSON of runtime.ServiceRecord
//
// The JSON is encoding/json of the record types with their json tags, for
// example
//
//	{"id":"l-1","job":"build","attempt":"a1","pools":{"gpu":1},"ttl":30000000000,
//	 "expires":"2025-01-02T03:04:35Z","admitted":"2025-01-02T03:04:05Z"}
//	{"name":"colima/vm","failures":2,"reason":"exit 1","backoff_until":"2025-01-02T03:05:00Z"}
//
// durations are integer nanoseconds, times RFC 3339 with nanoseconds. Keys
// equal the record's id or name; State checks it. A value may gain fields
// that older readers can ignore; any other change of layout or meaning
// bumps the version, and a svcrun refuses a version newer than the one it
// knows (SchemaVersion). The file can be inspected with bbolt's CLI, e.g.
// `bbolt keys state.db leases` and `bbolt get state.db leases <id>`, while
// svcrun is stopped.
package store
