package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// ContainerRequest is POST /v1/leases/{id}/containers: a container of the
// lease, created and started. Zero limits take the node's defaults
// ([containers] mem_gb, cpus, pids); a limit over the node's maximum is a
// 400 naming its field. Labels may not start with "oarbank.".
type ContainerRequest struct {
	Image   string            `json:"image"`
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workdir,omitempty"`
	User    string            `json:"user,omitempty"`
	Network string            `json:"network,omitempty"` // "none" (default) or "bridge" where the node allows it
	MemGB   float64           `json:"mem_gb,omitempty"`
	CPUs    float64           `json:"cpus,omitempty"`
	Pids    int64             `json:"pids,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Container is one container of a lease.
type Container struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Image     string            `json:"image"`
	Lease     string            `json:"lease"`
	State     string            `json:"state"` // created, running, exited, ... as the runtime says
	ExitCode  int               `json:"exit_code"`
	OOMKilled bool              `json:"oom_killed"`
	Created   time.Time         `json:"created"`
	Address   string            `json:"address,omitempty"` // its IP address; none on network "none"
	Labels    map[string]string `json:"labels"`
}

// ContainerList is GET /v1/leases/{id}/containers.
type ContainerList struct {
	Lease      string      `json:"lease"`
	Containers []Container `json:"containers"`
}

// LogFrame is one line of GET .../containers/{cid}/logs, a stream of
// JSON lines: a piece of the container's output.
type LogFrame struct {
	Stream string `json:"stream"` // "stdout", "stderr", or "error": the stream broke, Data says why
	Data   string `json:"data"`
}

func containerPath(lease string, rest ...string) string {
	p := "/v1/leases/" + url.PathEscape(lease) + "/containers"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// CreateContainer creates and starts a container for a lease.
func (c *Client) CreateContainer(ctx context.Context, lease string, req ContainerRequest) (Container, error) {
	var out Container
	err := c.call(ctx, http.MethodPost, containerPath(lease), req, &out)
	return out, err
}

// Containers lists a lease's containers, oldest first.
func (c *Client) Containers(ctx context.Context, lease string) (ContainerList, error) {
	var out ContainerList
	err := c.call(ctx, http.MethodGet, containerPath(lease), nil, &out)
	return out, err
}

// WaitContainer waits until a container of the lease exits and returns it
// as it ended; canceling ctx stops waiting.
func (c *Client) WaitContainer(ctx context.Context, lease, id string) (Container, error) {
	var out Container
	err := c.call(ctx, http.MethodGet, containerPath(lease, id, "wait"), nil, &out)
	return out, err
}

// StopContainer stops a container of the lease (its token is free again).
func (c *Client) StopContainer(ctx context.Context, lease, id string) error {
	var d Done
	return c.call(ctx, http.MethodPost, containerPath(lease, id, "stop"), nil, &d)
}

// RemoveContainer stops and removes a container of the lease; one already
// gone is no error.
func (c *Client) RemoveContainer(ctx context.Context, lease, id string) error {
	var d Done
	return c.call(ctx, http.MethodDelete, containerPath(lease, id), nil, &d)
}

// ContainerLogs copies a container's output to stdout and stderr; with
// follow, until the container exits (or ctx ends).
func (c *Client) ContainerLogs(ctx context.Context, lease, id string, follow bool, stdout, stderr io.Writer) error {
	p := containerPath(lease, id, "logs")
	if follow {
		p += "?follow=1"
	}
	x, err := c.send(ctx, http.MethodGet, p, nil)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(x.resp.Body)
	for {
		var f LogFrame
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				x.done()
				return nil
			}
			x.abort()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("svcrun at %s: logs of container %s: %w", c.socket, id, err)
		}
		if f.Stream == "error" {
			x.abort()
			return fmt.Errorf("logs of container %s: %s", id, f.Data)
		}
		w := stdout
		if f.Stream == "stderr" {
			w = stderr
		}
		if _, err := io.WriteString(w, f.Data); err != nil {
			x.abort()
			return err
		}
	}
}
