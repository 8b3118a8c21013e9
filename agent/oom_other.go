//go:build !linux

package agent

import "errors"

// SetOOMScoreAdj does nothing where there is no oom_score_adj.
func SetOOMScoreAdj(int) error { return nil }

func readOOMScoreAdj() (string, error) { return "", errors.ErrUnsupported }

func writeOOMScoreAdj(string) error { return errors.ErrUnsupported }
