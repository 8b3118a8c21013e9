package protocol

import "testing"

// typicalFingerprint is what a container-runtime service prints.
var typicalFingerprint = []byte(`{
  "healthy": true,
  "running": true,
  "message": "colima 0.6.8 running (vz, 4 CPUs, 8 GiB)",
  "attrs": {"runtime": "docker", "version": "0.6.8", "cpus": 4, "arch": "aarch64", "rosetta": true},
  "pools": {"docker-slots": 4},
  "reserve": {"mem_gb": 8}
}
`)

func BenchmarkDecodeFingerprint(b *testing.B) {
	out := Output{Stdout: typicalFingerprint}
	b.SetBytes(int64(len(typicalFingerprint)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(OpFingerprint, RoleService, out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseDocument(typicalFingerprint); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeOwnedList(b *testing.B) {
	out := Output{Stdout: []byte(`{"objects":[
{"id":"3f2a9c1d","kind":"container","labels":{"oarbank.attempt_id":"a-1","oarbank.node":"node-1",
"oarbank.service":"colima/colima"},
"created_at":"2024-05-01T10:00:00Z","busy":true},
{"id":"vol-7","kind":"volume","labels":{"oarbank.attempt_id":"a-2","oarbank.node":"node-1",
"oarbank.service":"colima/colima"},
"created_at":"2024-05-01T10:05:00.25+02:00"}]}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(OpListOwned, RoleService, out); err != nil {
			b.Fatal(err)
		}
	}
}
