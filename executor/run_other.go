//go:build !linux

package executor

import "context"

// runNative: only Linux has a native engine; elsewhere Run uses the
// portable one.
func runNative(context.Context, *prepared) (Result, bool) { return Result{}, false }
