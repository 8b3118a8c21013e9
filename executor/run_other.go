//go:build !linux

package executor

import "context"

// spawnNative: only Linux has a native engine; elsewhere Spawn uses the
// portable one.
func spawnNative(context.Context, *spawning) (Result, bool) { return Result{}, false }
