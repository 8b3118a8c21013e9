package podman

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Spec is what a container is created with.
type Spec struct {
	Name        string // optional
	Image       string // a full reference (the broker normalises)
	Command     []string
	Env         map[string]string
	WorkDir     string
	User        string
	Labels      map[string]string
	Network     string  // "none" (also "") or "bridge"
	MemoryBytes int64   // 0: none; swap is always set equal (no swap)
	CPUs        float64 // 0: none
	Pids        int64   // 0: the runtime's default (podman's pids_limit, 2048)
}

// cpuPeriod is the CFS period a CPU limit is a quota of (the kernel's
// default, as podman's --cpus uses).
const cpuPeriod = 100000

// specGen is the subset of libpod's SpecGenerator that Create sends.
// Fields are always sent, false and empty included, so that what the
// hardening asks for is in the request, not left to podman's defaults.
type specGen struct {
	Name            string            `json:"name,omitempty"`
	Image           string            `json:"image"`
	Command         []string          `json:"command,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	WorkDir         string            `json:"work_dir,omitempty"`
	User            string            `json:"user,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Init            bool              `json:"init"`
	NoNewPrivileges bool              `json:"no_new_privileges"`
	Privileged      bool              `json:"privileged"`
	Netns           namespace         `json:"netns"`
	Resources       *resources        `json:"resource_limits,omitempty"`
}

type namespace struct {
	Mode string `json:"nsmode"`
}

// resources is the OCI runtime spec's LinuxResources, as libpod takes it.
type resources struct {
	Memory *struct {
		Limit int64 `json:"limit"`
		Swap  int64 `json:"swap"`
	} `json:"memory,omitempty"`
	CPU *struct {
		Quota  int64  `json:"quota"`
		Period uint64 `json:"period"`
	} `json:"cpu,omitempty"`
	Pids *struct {
		Limit int64 `json:"limit"`
	} `json:"pids,omitempty"`
}

// Create creates (does not start) a container of s. It always asks for an
// init process as PID 1 (it reaps the command's orphans and forwards
// signals), no new privileges, no privileged mode; it passes no devices
// and no mounts, and sets memory-swap equal to memory (no swap). Podman
// ignores fields it does not know: Inspect says what it applied.
func (c *Client) Create(ctx context.Context, s Spec) (id string, err error) {
	g := specGen{
		Name: s.Name, Image: s.Image, Command: s.Command, Env: s.Env,
		WorkDir: s.WorkDir, User: s.User, Labels: s.Labels,
		Init: true, NoNewPrivileges: true, Privileged: false,
	}
	switch s.Network {
	case "", "none":
		g.Netns.Mode = "none"
	case "bridge":
		g.Netns.Mode = "bridge"
	default:
		return "", fmt.Errorf("podman create %s: network %q: only none and bridge are offered", s.Image, s.Network)
	}
	if s.MemoryBytes < 0 || s.CPUs < 0 || s.Pids < 0 || math.IsNaN(s.CPUs) || math.IsInf(s.CPUs, 0) {
		return "", fmt.Errorf("podman create %s: negative or not finite limits (memory %d, cpus %v, pids %d)", s.Image,
			s.MemoryBytes, s.CPUs, s.Pids)
	}
	var r resources
	if s.MemoryBytes > 0 {
		r.Memory = &struct {
			Limit int64 `json:"limit"`
			Swap  int64 `json:"swap"`
		}{s.MemoryBytes, s.MemoryBytes}
	}
	if s.CPUs > 0 {
		r.CPU = &struct {
			Quota  int64  `json:"quota"`
			Period uint64 `json:"period"`
		}{int64(math.Round(s.CPUs * cpuPeriod)), cpuPeriod}
	}
	if s.Pids > 0 {
		r.Pids = &struct {
			Limit int64 `json:"limit"`
		}{s.Pids}
	}
	if r.Memory != nil || r.CPU != nil || r.Pids != nil {
		g.Resources = &r
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := c.call(ctx, request{method: http.MethodPost, path: "/containers/create", json: g}, &out); err != nil {
		return "", fmt.Errorf("podman create %s: %w", s.Image, err)
	}
	if out.ID == "" {
		return "", fmt.Errorf("podman create %s: the answer names no container", s.Image)
	}
	return out.ID, nil
}

// Start starts a created container; starting a running one is no error.
func (c *Client) Start(ctx context.Context, id string) error {
	resp, err := c.do(ctx, request{method: http.MethodPost, path: ctrPath(id, "/start")}, http.StatusNotModified)
	if err != nil {
		return fmt.Errorf("podman start %s: %w", id, err)
	}
	resp.close()
	return nil
}

// Limits are a container's resource limits; 0 is none.
type Limits struct {
	MemoryBytes, MemorySwapBytes int64
	CPUs                         float64
	Pids                         int64
}

// Container is what the runtime says of a container. List fills the
// fields its answer holds: ID, Name, Image, Labels, State, ExitCode and
// the times; Inspect all of them. FinishedAt may precede StartedAt for a
// container that exits at once: podman stamps the start when the
// runtime's start returns, the finish from conmon's exit.
type Container struct {
	ID, Name, Image                string
	Labels                         map[string]string
	State                          string // created, running, exited, stopped, ... as podman says
	ExitCode                       int
	OOMKilled                      bool
	Created, StartedAt, FinishedAt time.Time
	Limits                         Limits // as the runtime applied them (from inspect)
	IPAddress                      string // "" with network none
}

// inspectAnswer is the subset of libpod's InspectContainerData read.
type inspectAnswer struct {
	ID        string    `json:"Id"`
	Name      string    `json:"Name"`
	ImageName string    `json:"ImageName"`
	Created   time.Time `json:"Created"`
	State     struct {
		Status     string    `json:"Status"`
		ExitCode   int       `json:"ExitCode"`
		OOMKilled  bool      `json:"OOMKilled"`
		StartedAt  time.Time `json:"StartedAt"`
		FinishedAt time.Time `json:"FinishedAt"`
	} `json:"State"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
	HostConfig struct {
		Memory     int64  `json:"Memory"`
		MemorySwap int64  `json:"MemorySwap"`
		CPUQuota   int64  `json:"CpuQuota"`
		CPUPeriod  uint64 `json:"CpuPeriod"`
		PidsLimit  int64  `json:"PidsLimit"`
	} `json:"HostConfig"`
	NetworkSettings struct {
		IPAddress string `json:"IPAddress"`
		Networks  map[string]struct {
			IPAddress string `json:"IPAddress"`
		} `json:"Networks"`
	} `json:"NetworkSettings"`
}

// Inspect returns the container id (or name).
func (c *Client) Inspect(ctx context.Context, id string) (Container, error) {
	var a inspectAnswer
	if err := c.call(ctx, request{method: http.MethodGet, path: ctrPath(id, "/json")}, &a); err != nil {
		return Container{}, fmt.Errorf("podman inspect %s: %w", id, err)
	}
	ct := Container{
		ID: a.ID, Name: a.Name, Image: a.ImageName, Labels: a.Config.Labels,
		State: a.State.Status, ExitCode: a.State.ExitCode, OOMKilled: a.State.OOMKilled,
		Created: a.Created, StartedAt: zeroTime(a.State.StartedAt), FinishedAt: zeroTime(a.State.FinishedAt),
		Limits: Limits{
			MemoryBytes:     a.HostConfig.Memory,
			MemorySwapBytes: a.HostConfig.MemorySwap,
			Pids:            a.HostConfig.PidsLimit,
		},
		IPAddress: a.NetworkSettings.IPAddress,
	}
	if a.HostConfig.CPUQuota > 0 && a.HostConfig.CPUPeriod > 0 {
		ct.Limits.CPUs = float64(a.HostConfig.CPUQuota) / float64(a.HostConfig.CPUPeriod)
	}
	if ct.IPAddress == "" {
		// A network of netavark's names its address per network only.
		for _, n := range a.NetworkSettings.Networks {
			if n.IPAddress != "" {
				ct.IPAddress = n.IPAddress
				break
			}
		}
	}
	return ct, nil
}

// zeroTime maps libpod's "0001-01-01T00:00:00Z" of a time not yet come to
// Go's zero time, so that IsZero tells it.
func zeroTime(t time.Time) time.Time {
	if t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// unixTime maps a time of libpod's list, in seconds since the epoch and
// negative when it has not come, to a time.
func unixTime(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// listEntry is the subset of libpod's ListContainer read.
type listEntry struct {
	ID        string            `json:"Id"`
	Names     []string          `json:"Names"`
	Image     string            `json:"Image"`
	Labels    map[string]string `json:"Labels"`
	State     string            `json:"State"`
	ExitCode  int               `json:"ExitCode"`
	Created   time.Time         `json:"Created"`
	StartedAt int64             `json:"StartedAt"`
	ExitedAt  int64             `json:"ExitedAt"`
}

// List returns the containers (running or not) carrying every given label
// with that value ("" value: the label present). No label: every
// container.
func (c *Client) List(ctx context.Context, labels map[string]string) ([]Container, error) {
	q := url.Values{"all": {"true"}}
	if len(labels) > 0 {
		var fs []string
		for k, v := range labels {
			if v == "" {
				fs = append(fs, k)
			} else {
				fs = append(fs, k+"="+v)
			}
		}
		b, err := json.Marshal(map[string][]string{"label": fs})
		if err != nil {
			return nil, err
		}
		q.Set("filters", string(b))
	}
	var es []listEntry
	if err := c.call(ctx, request{method: http.MethodGet, path: "/containers/json", query: q}, &es); err != nil {
		return nil, fmt.Errorf("podman list %v: %w", labels, err)
	}
	cs := make([]Container, 0, len(es))
	for _, e := range es {
		ct := Container{
			ID: e.ID, Image: e.Image, Labels: e.Labels, State: e.State, ExitCode: e.ExitCode,
			Created: e.Created, StartedAt: unixTime(e.StartedAt), FinishedAt: unixTime(e.ExitedAt),
		}
		if len(e.Names) > 0 {
			ct.Name = e.Names[0]
		}
		cs = append(cs, ct)
	}
	return cs, nil
}

// waitInterval is how often podman 4.3 looks at the container's state
// while answering a wait: it polls (every 250 ms unless told), and each
// look is cheap, so a short one makes a short container's exit seen soon.
const waitInterval = "50ms"

// Wait waits until the container exits and returns its exit code;
// canceling ctx ends the wait.
func (c *Client) Wait(ctx context.Context, id string) (exitCode int, err error) {
	q := url.Values{"condition": {"stopped", "exited"}, "interval": {waitInterval}}
	var code int
	if err := c.call(ctx, request{method: http.MethodPost, path: ctrPath(id, "/wait"), query: q}, &code); err != nil {
		return 0, fmt.Errorf("podman wait %s: %w", id, err)
	}
	return code, nil
}

// Logs copies the container's output to stdout and its error output to
// stderr (either may be nil: that stream is dropped); with follow, until
// the container exits or ctx ends.
func (c *Client) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	q := url.Values{"stdout": {"true"}, "stderr": {"true"}, "follow": {strconv.FormatBool(follow)}}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: ctrPath(id, "/logs"), query: q})
	if err != nil {
		return fmt.Errorf("podman logs %s: %w", id, err)
	}
	defer resp.close()
	if err := demux(resp.Body, stdout, stderr); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("podman logs %s: %w", id, err)
	}
	return nil
}

// demux splits the log stream of a container without a terminal: frames
// of an 8-byte header (the stream: 1 stdout, 2 stderr; 3 bytes of zero;
// the length, big-endian) and that many bytes.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var h [8]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int64(binary.BigEndian.Uint32(h[4:]))
		w := io.Discard
		switch h[0] {
		case 1:
			if stdout != nil {
				w = stdout
			}
		case 2:
			if stderr != nil {
				w = stderr
			}
		case 0:
		default:
			return fmt.Errorf("a log frame of stream %d: not a log stream", h[0])
		}
		if _, err := io.CopyN(w, r, n); err != nil {
			return err
		}
	}
}

// Stop stops the container: SIGTERM (or its image's stop signal), then
// SIGKILL after timeout. A container not running or absent is no error.
func (c *Client) Stop(ctx context.Context, id string, timeout time.Duration) error {
	secs := int64((timeout + time.Second - 1) / time.Second)
	q := url.Values{"timeout": {strconv.FormatInt(secs, 10)}}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: ctrPath(id, "/stop"), query: q}, http.StatusNotModified)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("podman stop %s: %w", id, err)
	}
	resp.close()
	return nil
}

// Remove removes the container, killing it if it runs; absent is no
// error.
func (c *Client) Remove(ctx context.Context, id string) error {
	q := url.Values{"force": {"true"}}
	var reports []struct {
		ID  string `json:"Id"`
		Err string `json:"Err"`
	}
	err := c.call(ctx, request{method: http.MethodDelete, path: ctrPath(id, ""), query: q}, &reports)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("podman rm %s: %w", id, err)
	}
	for _, r := range reports {
		if r.Err != "" {
			return fmt.Errorf("podman rm %s: %s", id, r.Err)
		}
	}
	return nil
}

// ctrPath is the API path of container id (or name) and an action. An
// id holding a slash is sent escaped, so that it names one container
// (podman knows none such), never another path of the API.
func ctrPath(id, action string) string {
	return "/containers/" + url.PathEscape(id) + action
}
