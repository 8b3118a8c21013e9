//go:build !unix

package main

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd alone.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
