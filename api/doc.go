// Package api is svcrun's local API: HTTP/JSON over a Unix socket, its
// wire types, and the client the svcrun commands use. It links nothing of
// the daemon (package api/server serves it).
//
// # The socket
//
// The socket file is created mode 0600 (under a umask, then chmod'ed
// again) in a directory created 0755 if missing. A socket file already
// there is removed only when nothing answers on it; if something does, the
// server refuses to start ("another svcrun listens on SOCKET"). At close
// the file is removed if it is still the one this server created.
//
// Every connection's peer is checked (SO_PEERCRED on Linux,
// LOCAL_PEERCRED on macOS): root and svcrun's own effective uid may use the
// API, anyone else gets 403. Where the platform has no peer credentials
// (Windows) the socket file's ACL is the guard.
//
// # Routes
//
//	GET    /v1/status                            Status
//	POST   /v1/leases                            AcquireRequest -> Grant; blocks until admitted or rejected
//	POST   /v1/leases/{id}/renew                 -> Renewal
//	DELETE /v1/leases/{id}                       -> Released
//	POST   /v1/doctor                            -> Done (the probes run again)
//	POST   /v1/reap                              -> ReapResult, once the round has ended
//	POST   /v1/services/{module}/{service}/reset -> Done
//	GET    /v1/services/{module}/{service}/processes -> []Process, those in its container
//	POST   /v1/modules/{name}/enable             -> Done
//	POST   /v1/modules/{name}/disable            -> Done
//	POST   /v1/reload                            -> ReloadResult
//	GET    /v1/events[?since=T&last=N&follow=false] newline-delimited Record: the kept ones asked for,
//	                                             then new ones until the client goes away (EventsQuery)
//	GET    /metrics                              Prometheus text format
//
// The container broker's routes, under the lease whose id proves the
// caller holds it (docs/containers.md):
//
//	POST   /v1/leases/{id}/containers            ContainerRequest -> 201 Container, created and started
//	GET    /v1/leases/{id}/containers            -> ContainerList, oldest first
//	GET    /v1/leases/{id}/containers/{cid}      -> Container
//	GET    /v1/leases/{id}/containers/{cid}/wait -> Container once it has exited (a long poll)
//	GET    /v1/leases/{id}/containers/{cid}/logs[?follow=1] newline-delimited LogFrame
//	POST   /v1/leases/{id}/containers/{cid}/stop -> Done
//	DELETE /v1/leases/{id}/containers/{cid}      -> Done; idempotent
//
// Durations in requests are strings ("30s"). Every error is an ErrorBody
// with its status: 400 a bad request (with the field), 403 a refused peer
// or an image not approved, 404 an unknown route, lease, service, module or
// container, 405 a wrong method, 409 a lease not admitted (with the reason)
// or more containers than its tokens, 422 a reload refused, 503 svcrun
// stopping or the container runtime not answering, 504 a timeout, 507 a full data dir or a state file deleted
// under svcrun, 500 anything else. The
// errors of package errdefs are mapped to their status and code in one
// table: the server answers an error with what Answer gives it, and the
// client's *Error matches the errdefs error of its code, so callers use
// errors.Is and errors.As.
//
// # Acquire
//
// An acquire names its attempt (required; Client.Acquire makes one when
// it is empty). An attempt holds one lease: asked again with the same
// attempt, job, TTL and requirements, the answer is the lease already
// admitted (its TTL restarted), also from a svcrun restarted since, so a
// caller whose answer was lost asks again without leaving a lease that
// nobody holds. A request of the attempt still waiting is taken over by
// the new one, in its place in line (the older caller gets a 409
// "superseded"); other requirements under the attempt are a 409 naming the
// lease it has. Waiting requests are not stored: after a restart the
// caller's retry is a new request.
//
// The body is validated here, once, before the agent sees it: one JSON
// object with known fields, each at most once, nothing after it, at most
// MaxBody bytes, arriving within the body timeout (10 s) of the headers;
// names (job, attempt, capabilities, pools, needs_pools) of 1 to MaxName
// printable bytes, at most MaxItems of each list and none twice; tokens
// 1 or more; wait 0 to MaxWait; ttl 0 (held until released) or MinTTL to
// MaxTTL. A bad name is quoted in the error cut to a short prefix. The
// deadline covers only the body: an acquire then waits for admission as
// long as it asked, which a server-wide read or write timeout would cut.
//
// A lease admitted while its client has gone away (the connection closed
// before the answer) is released at once, so that no lease is left without
// a holder.
//
// # The grant
//
// The Grant says how a job finds what its lease depends on: besides the
// lease, the attempt and the node id, Uses lists every service the lease
// uses and every probe establishing a capability it asked for, each with
// its capabilities and the attrs of its latest fingerprint as the lease
// was admitted ({} before any: a socket path, a port, a version). `svcrun
// run` writes them, with the labels the job's objects must carry, to the
// file $OARBANK_SERVICES_FILE names (ServicesFile, mode 0600, in the
// user's private $TMPDIR/svcrun-services-<uid>/, removed when the command
// ends, or by a later run if the run was killed before it could). Status shows the same attrs, and each service's
// latest fingerprint's health and message (Healthy, Message; Unhealthy is
// the count of failures reaching max_failures, another thing).
//
// # Reap
//
// POST /v1/reap answers once its round has ended: every listing and every
// destroy it started is done, or its service left the round (stopped,
// disabled, no longer ready). Rounds never overlap. A round that is
// already running took its snapshot of live attempts before the request,
// so the request waits for it to end and gets the next round, which every
// request made meanwhile shares; the periodic round is skipped while one
// runs. The answer lists each service: not listed (skipped: disabled,
// manual, not running; or failed: its list_owned failed, or it stopped
// first), or its objects, each destroyed, kept (with why: attempt live,
// missing labels, another node's or service's, created after the
// snapshot, attempt live again) or failed (with the destroy's error). A
// client that goes away stops waiting; the round goes on.
package api
