package scenario

import (
	"strings"

	"github.com/oarbank/svcrun/engine"
)

// parseDoctor reads `doctor [REASON...]`: a request to run the probes again.
func (p *parser) parseDoctor(in *Input, args []string) error {
	reason := "explicit request"
	if len(args) > 0 {
		reason = strings.Join(args, " ")
	}
	in.ev = engine.Doctor{Reason: reason}
	return nil
}
