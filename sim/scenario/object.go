package scenario

import (
	"strings"

	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// parseObject reads `object MODULE/SERVICE id=ID ...`: an object (a
// container, a VM) that the service owns appears, for the reaper to find.
func (p *parser) parseObject(in *Input, args []string) error {
	usage := "usage: at T object MODULE/SERVICE id=ID [attempt=A] [node=N] [service=S] [kind=K] [created=T] " +
		"[busy] [stubborn] [nolabels]"
	if len(args) < 1 || strings.Contains(args[0], "=") {
		return lineError(p.file, in.Line, "%s", usage)
	}
	in.target = args[0]
	o := fakes.Object{}
	labels := map[string]string{}
	nolabels := false
	for _, x := range parseKVs(args[1:]) {
		if x.Flag {
			switch x.Key {
			case "busy":
				o.Busy = true
			case "stubborn":
				o.Stubborn = true
			case "nolabels":
				nolabels = true
			default:
				return lineError(p.file, in.Line, "object: unknown flag %q; flags: busy, stubborn, nolabels", x.Key)
			}
			continue
		}
		switch x.Key {
		case "id":
			o.ID = x.Value
		case "kind":
			o.Kind = x.Value
		case "attempt":
			labels[protocol.LabelAttemptID] = x.Value
		case "node":
			labels[protocol.LabelNode] = x.Value
		case "service":
			labels[protocol.LabelService] = x.Value
		case "created":
			d, err := parseDuration(x.Value)
			if err != nil {
				return lineError(p.file, in.Line, "object created=%s: %v", x.Value, err)
			}
			in.createdAt = &d
		default:
			return lineError(p.file, in.Line, "object: unknown key %q; keys: id, kind, attempt, node, service, created", x.Key)
		}
	}
	switch {
	case o.ID == "":
		return lineError(p.file, in.Line, "object: id= is required")
	case nolabels && len(labels) > 0:
		return lineError(p.file, in.Line, "object: nolabels and label keys (attempt, node, service) exclude each other")
	case !nolabels && len(labels) == 0:
		return lineError(p.file, in.Line, "object: give its labels (attempt=, node=, service=) or say nolabels")
	}
	if !nolabels {
		o.Labels = labels
	}
	in.object = o
	return nil
}

// playObject adds the object to the fake executor, created at the input's
// time unless created= says otherwise.
func (pl *player) playObject(in *Input) error {
	o := in.object
	if in.createdAt != nil {
		o.CreatedAt = sim.Epoch.Add(*in.createdAt)
	} else {
		o.CreatedAt = pl.w.Now()
	}
	pl.w.Exec.AddObject(in.target, o)
	return pl.input(in, in.Text, nil)
}
