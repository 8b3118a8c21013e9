package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

const oomScoreAdjFile = "/proc/self/oom_score_adj"

// SetOOMScoreAdj sets svcrun's own oom_score_adj (OOMScoreAdj), before
// Open, which makes ops start with 0. Lowering it needs CAP_SYS_RESOURCE.
func SetOOMScoreAdj(v int) error {
	if err := writeOOMScoreAdj(strconv.Itoa(v)); err != nil {
		return fmt.Errorf("set oom_score_adj %d: %w", v, err)
	}
	return nil
}

func readOOMScoreAdj() (string, error) {
	b, err := os.ReadFile(oomScoreAdjFile)
	return strings.TrimSpace(string(b)), err
}

func writeOOMScoreAdj(v string) error {
	return os.WriteFile(oomScoreAdjFile, []byte(v), 0)
}
