package module

import (
	"bytes"
	"os"
	"strconv"
)

// zombie reports whether pid has exited and waits to be reaped: kill(2)
// still finds it, but it is no longer running.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis; the name
	// itself may hold one.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}
