// Package store keeps svcrun's durable state, the leases it admitted and
// the failure records of its services, in one bbolt file (like Nomad's
// client state.db) and the write-ahead log in front of it. It is the
// engine.Store of svcrun; sim.MemStore is its in-memory equivalent.
//
// # Contract
//
// Apply writes one batch of persistence effects (engine.PutLease,
// engine.DeleteLease, engine.PutService) as ONE record of the
// write-ahead log and returns only once the record is on disk
// (fdatasync). So when Apply returns nil the whole batch survives a crash
// of svcrun or of the machine, and when it returns an error, or the
// process dies before it returns, either the whole batch or nothing of it
// is there at the next Open. This is what the driver contract of package
// engine needs: a step's persistence effects are durable, in one
// transaction, before anything else of the step is carried out. Any other
// effect type in a batch is a driver bug: Apply refuses the batch and
// writes nothing of it. After a failed log write every later Apply fails
// too (what reached the disk is unknown): svcrun stops, and the next Open
// recovers.
//
// State returns everything stored, for engine.Boot: leases sorted by id,
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
// do. Before anything is written, Open checks: the file's size against
// what its meta page says (bbolt maps the file, and a page cut off its end
// would be a SIGBUS, not an error), bbolt's consistency, the schema, every
// record as State decodes it, and the log. A state file that is missing
// or empty while its log is there is refused too, not made anew. A DB is
// safe for use by several goroutines.
//
// # The write-ahead log
//
// A bbolt commit costs two fsyncs (its pages, then its meta page) and
// often a file-system journal commit; an engine step costs one fdatasync
// of a record overwriting blocks the log file already has, a third of the
// time (bench/README.md, row store). The log "<name>.wal" (mode 0600) is
// made once, zero-filled to Options.LogBytes (16 MiB by default), never
// grown. It is read and written in blocks of 4096 bytes. The first block
// is the header: the magic "svcrun-log-v1\n\0\0", the state file's id
// (32 hex digits, also in the state file's meta bucket, so a log is never
// replayed into another state file), the file's size (uint64, so a log
// cut short is refused rather than read as one that ends early), and a
// CRC-32C of these 56 bytes. Records follow, each starting a block (so
// that writing a record never rewrites a block holding an earlier,
// acknowledged one):
//
//	length   uint32, little-endian, of the payload
//	crc      uint32, CRC-32C (Castagnoli) of length, seq and payload
//	seq      uint64, the batch's number: one more than the record before
//	payload  per effect: op (1 put-lease, 2 delete-lease, 3 put-service),
//	         uvarint key length, key, uvarint value length, value (the
//	         record's JSON, as in the state file; empty for a delete)
//
// A checkpoint writes what the log holds into the state file in one bbolt
// transaction, together with the number of the last batch ("wal_seq" in
// the meta bucket), and new records then overwrite the log from its start.
// It runs when the next record would pass three quarters of the log, at
// every Open (after the replay), before State, and at Close; a batch
// bigger than that goes straight into the state file, after a checkpoint. Open's checkpoint
// sets "wal_open" to 1 and Close's sets it to 0: a missing log is made
// anew only when the state file says it holds everything.
//
// Open reads the records from the start while they are whole and
// consecutive (the old records behind the last one written have lower
// numbers, and a torn last record fails its checksum), checks each batch
// as Apply and State would, and replays those after wal_seq. Where that
// chain ends it looks on, block by block, for any whole record with a
// higher number than the chain's last (or than wal_seq): one there means
// the record where the chain ended was damaged in the middle of the log,
// with acknowledged batches behind it, and the log is refused, naming
// that record's offset. Only a torn tail may end the log; a damaged last
// record cannot be told from a torn write of it and ends the log too. A log that
// is missing after a crash, whose header is damaged or whose size
// differs from it, that belongs to another state file (or lies beside a
// state file that has no log of its own), that continues from a later
// step than the state file holds (a state file restored from an older
// backup), or whose records do not check, is refused like a damaged
// state file, and neither file is written. After a failed write or
// checkpoint the DB refuses everything but Close (what reached the disk
// is unknown); the next Open recovers.
//
// # A full data dir
//
// The log is preallocated, so a full file system (ENOSPC, EDQUOT) shows
// at a checkpoint, when bbolt needs new pages. A checkpoint that finds no
// space writes nothing that counts: the batch number stays and the log is
// not overwritten. So it does not fail the DB; the DB is "full"
// (ErrFull, "the data dir is full: DIR: no space left on device"). A
// checkpoint is due when the next record would pass three quarters of the
// log; the last quarter is the reserve, for the batches that still come
// while the DB is full (releases, expiries, service failures): Writable
// refuses what can wait (the agent asks it before taking a new or
// renewed lease), State reads the state file with the log's records over
// it. The checkpoint is tried again at each batch and Writable once a
// backoff (1 s doubling to 30 s) has passed; the first that succeeds ends
// the full state, and Options.OnFull hears of both changes. An Open whose
// replay finds no space opens full, appending after the log's last
// record. Only a batch that finds the reserve used up fails (with
// ErrFull; the DB stays usable, what was stored stays). A failure other
// than no space, of a log write or a checkpoint, still fails the DB.
//
// # Creation
//
// When the file does not exist, Open creates the directory (mode 0700) if
// it is missing, builds a complete store of the current version in a temporary file
// "<name>.new-*" of the same directory (mode 0600), links it into place
// (never replacing a file that appeared meanwhile) and fsyncs the
// directory. So the state file either does not exist or is a whole,
// versioned store, and its name is durable before the first Apply. The
// log is made the same way ("<name>.new-wal-*", zero-filled, fsynced,
// renamed into place) when it is missing. A leftover "<name>.new-*" file
// (a crash during a creation) holds nothing and is removed by the next
// Open.
//
// # On-disk layout, schema version 2
//
// The file is a bbolt database with three top-level buckets:
//
//	meta      "version"  -> ASCII decimal schema version, "2"
//	          "id"       -> 32 hex digits, the id its log's header repeats
//	          "wal_seq"  -> ASCII decimal number of the last batch it holds
//	          "wal_open" -> "1" while a svcrun has it open, else "0"
//	leases    lease id (engine.LeaseID, UTF-8) -> JSON of engine.LeaseRecord
//	services  service name ("module/name")     -> JSON of engine.ServiceRecord
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
// knows (SchemaVersion). Version 1 (without id, wal_seq, wal_open and
// log) is upgraded in place by Open. The file can be inspected with bbolt's CLI,
// e.g. `bbolt keys state.db leases` and `bbolt get state.db leases <id>`,
// while svcrun is stopped: after a clean stop it holds everything (Close
// checkpoints); after a crash the latest batches are in the log until the
// next Open replays them.
package store
