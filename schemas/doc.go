// Package schemas owns the wire format of service protocol 1: the four JSON
// Schemas (draft 2020-12) that describe what a service's or probe's op prints
// on stdout, embedded in the binary and compiled on first use.
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
// # The validator
//
// Validate uses this package's own validator, which implements exactly the
// keywords the four schemas use: type (integer included: 2.0 and 2e3 are
// integers), properties, required, additionalProperties (false or a
// schema), items, minimum, maximum (compared exactly, never as float64),
// enum of strings and format date-time (asserted: RFC 3339 with the day
// checked against its month and a leap second only at 23:59 UTC), plus the
// annotations title and description. A schema using any other keyword is
// refused when it is loaded, with an error naming the file and the keyword
// (errors.Is ErrUnsupportedKeyword), so a later schema change cannot
// silently validate less. A general JSON Schema library is used only by the
// tests, which check that it and this validator agree on many documents;
// it is not linked into svcrun, whose every process would otherwise pay for
// compiling the meta-schemas of five drafts at init.
//
// As in JSON Schema, a value of the wrong type, outside its enum or of the
// wrong format is not checked further; every other violation is reported,
// each as a Violation with the instance location as path tokens.
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
// Validate is safe for concurrent use. The schemas are compiled on first
// use, not at init; a failure to compile is a build defect, reported as an
// error by every call rather than a panic, and caught by this package's
// tests. Validate expects the generic form produced by encoding/json with
// UseNumber (map[string]any, []any, string, json.Number, bool, nil); float64
// numbers are accepted too, and any other Go value is an error (errors.Is
// ErrNotJSON).
package schemas
