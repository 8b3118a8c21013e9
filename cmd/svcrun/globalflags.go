package main

import "strings"

// hoistGlobalFlags moves --socket and --config given before the command to
// just after it, where the command reads them: `svcrun --socket S status`
// is `svcrun status --socket S`. Anything else before the command is left
// for Program.Run to report.
func hoistGlobalFlags(args []string) []string {
	var lead []string
	i := 0
	for i < len(args) {
		a := args[i]
		name, _, inline := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "socket" && name != "config") {
			break
		}
		if inline {
			lead = append(lead, a)
			i++
			continue
		}
		if i+1 >= len(args) {
			break
		}
		lead = append(lead, a, args[i+1])
		i += 2
	}
	if len(lead) == 0 || i >= len(args) {
		return args
	}
	return append(append([]string{args[i]}, lead...), args[i+1:]...)
}
