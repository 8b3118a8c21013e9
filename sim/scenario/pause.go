package scenario

import (
	"time"

	"github.com/oarbank/svcrun/engine"
)

// parsePause reads `pause D`: svcrun stands still for D (SIGSTOP, a VM
// paused). Time goes on and the fake daemons with it; the inputs of the
// timeline within the pause wait, as requests wait in svcrun's socket.
// At its end the engine hears of the pause first, then what fell due
// during it (op ends, container events, timers) in order of time, then
// the inputs that waited, in file order.
func (p *parser) parsePause(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, "pause DURATION"); err != nil {
		return err
	}
	d, err := parseDuration(args[0])
	if err != nil || d <= 0 {
		return lineError(p.file, in.Line, "pause %q: a positive duration (60s, 2m)", args[0])
	}
	in.ev = engine.Paused{Length: d}
	in.pause = d
	return nil
}

// pauseEnd is when a pause input ends.
func (in *Input) pauseEnd() time.Duration { return in.At + in.pause }
