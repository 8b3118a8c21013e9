// Package schemas owns the wire format of service protocol 1: the four JSON
// Schemas (draft 2020-12) that describe what a service's or probe's op prints
// on stdout, embedded in the binary and compiled once.
//
// # The schemas
//
//	name                   $id                                                     ops
//	service-fingerprint-1  https://schemas.oarbank.dev/service-fingerprint-1.schema.json  fingerprint
//	service-opresult-1     https://schemas.oarbank.dev/service-opresult-1.schema.json     start, stop, destroy
//	service-status-1       https://schemas.oarbank.dev/service-status-1.schema.json       status, ready
//	service-ownedlist-1    https://schemas.oarbank.dev/service-ownedlist-1.schema.json    list_owned
//
// Every object rejects unknown properties: protocol 1 is strict so that a typo
// such as "runing" fails loudly instead of silently reading as absent. The
// date-time format of created_at is asserted, not just annotated.
//
// Each schema is registered under its fixed absolute $id rather than a file
// name, because a relative name would become a file:// URL that differs from
// machine to machine.
//
// # What the schemas do not say
//
// Some rules of the protocol cannot be expressed by one schema per result and
// live in package protocol's decoder instead: running is required in a
// service's fingerprint but optional in a probe's; ok must agree with the exit
// status; object ids must pass protocol.ValidObjectID (an object that fails is
// skipped, not the whole list); duplicate object keys are an error.
//
// # Contract
//
// Validate and Schema are safe for concurrent use. The schemas are compiled on
// first use; a failure to compile is a build defect, reported as an error by
// every call rather than a panic, and caught by this package's tests.
// Validate expects the generic form produced by encoding/json with UseNumber
// (map[string]any, []any, string, json.Number, bool, nil); float64 numbers are
// accepted too.
package schemas
