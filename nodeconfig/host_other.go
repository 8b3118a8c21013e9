//go:build !linux && !darwin

package nodeconfig

// physicalMemory is unknown here: memory_budget_gb must then be set.
func physicalMemory() uint64 { return 0 }
