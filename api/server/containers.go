package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/broker"
	"github.com/oarbank/svcrun/engine"
)

// The container routes: under a lease, whose id proves the caller holds
// it, as renew and release do.
func (s *Server) containerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/leases/{id}/containers", s.handleCreateContainer)
	mux.HandleFunc("GET /v1/leases/{id}/containers", s.handleContainers)
	mux.HandleFunc("GET /v1/leases/{id}/containers/{cid}", s.handleContainer)
	mux.HandleFunc("GET /v1/leases/{id}/containers/{cid}/wait", s.handleWaitContainer)
	mux.HandleFunc("GET /v1/leases/{id}/containers/{cid}/logs", s.handleContainerLogs)
	mux.HandleFunc("POST /v1/leases/{id}/containers/{cid}/stop", s.handleStopContainer)
	mux.HandleFunc("DELETE /v1/leases/{id}/containers/{cid}", s.handleRemoveContainer)
}

func wireContainer(lease string, c broker.Container) api.Container {
	labels := c.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return api.Container{ID: c.ID, Name: c.Name, Image: c.Image, Lease: lease, State: c.State,
		ExitCode: c.ExitCode, OOMKilled: c.OOMKilled,
		Created: c.Created, Address: c.Address, Labels: labels}
}

// containerFail answers a broker's error; a bad field keeps its name.
func (s *Server) containerFail(w http.ResponseWriter, r *http.Request, what string, err error) {
	var ie *broker.InvalidError
	if errors.As(err, &ie) {
		err = bad(ie.Field, "%s", ie.Reason)
	}
	s.fail(w, r, what, err)
}

func decodeContainer(b []byte) (api.ContainerRequest, error) {
	var q api.ContainerRequest
	fields := map[string]any{
		"image": &q.Image, "command": &q.Command, "env": &q.Env, "workdir": &q.WorkDir, "user": &q.User,
		"network": &q.Network, "mem_gb": &q.MemGB, "cpus": &q.CPUs, "pids": &q.Pids, "labels": &q.Labels,
	}
	err := eachMember(b, "", func(key string, raw json.RawMessage) error {
		dst, ok := fields[key]
		if !ok {
			return bad(cut(key),
				"unknown field; fields: image, command, env, workdir, user, network, mem_gb, cpus, pids, labels")
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return bad(key, "%s", jsonReason(err))
		}
		return nil
	})
	return q, err
}

func (s *Server) handleCreateContainer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	b, err := readBody(w, r, s.bodyTimeout)
	if err != nil {
		s.fail(w, r, "create a container", err)
		return
	}
	q, err := decodeContainer(b)
	if err != nil {
		s.fail(w, r, "create a container", err)
		return
	}
	c, err := s.a.CreateContainer(r.Context(), engine.LeaseID(id), broker.CreateRequest{
		Image: q.Image, Command: q.Command, Env: q.Env, WorkDir: q.WorkDir, User: q.User, Network: q.Network,
		MemGB: q.MemGB, CPUs: q.CPUs, Pids: q.Pids, Labels: q.Labels,
	})
	if err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusCreated, wireContainer(id, c))
}

func (s *Server) handleContainers(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	list, err := s.a.Containers(r.Context(), engine.LeaseID(id))
	if err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	out := api.ContainerList{Lease: id, Containers: []api.Container{}}
	for _, c := range list {
		out.Containers = append(out.Containers, wireContainer(id, c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleContainer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := s.a.Container(r.Context(), engine.LeaseID(id), r.PathValue("cid"))
	if err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, wireContainer(id, c))
}

func (s *Server) handleWaitContainer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := s.a.WaitContainer(r.Context(), engine.LeaseID(id), r.PathValue("cid"))
	if err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, wireContainer(id, c))
}

func (s *Server) handleStopContainer(w http.ResponseWriter, r *http.Request) {
	id, cid := r.PathValue("id"), r.PathValue("cid")
	if err := s.a.StopContainer(r.Context(), engine.LeaseID(id), cid); err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Done{OK: true, Message: "container " + cid + " stopped"})
}

func (s *Server) handleRemoveContainer(w http.ResponseWriter, r *http.Request) {
	id, cid := r.PathValue("id"), r.PathValue("cid")
	if err := s.a.RemoveContainer(r.Context(), engine.LeaseID(id), cid); err != nil {
		s.containerFail(w, r, "lease "+id, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Done{OK: true, Message: "container " + cid + " removed"})
}

// frames writes a container's output as LogFrames, one JSON line each,
// flushed as they come: the stream follows the container.
type frames struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

func (f *frames) frame(stream, data string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		f.w.Header().Set("Content-Type", "application/x-ndjson")
		f.w.WriteHeader(http.StatusOK)
		f.started = true
	}
	if err := f.enc.Encode(api.LogFrame{Stream: stream, Data: data}); err != nil {
		return err
	}
	return http.NewResponseController(f.w).Flush()
}

type frameWriter struct {
	f      *frames
	stream string
}

func (w frameWriter) Write(p []byte) (int, error) {
	if err := w.f.frame(w.stream, string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *Server) handleContainerLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	follow := r.URL.Query().Get("follow") == "1"
	f := &frames{w: w, enc: json.NewEncoder(w)}
	err := s.a.ContainerLogs(r.Context(), engine.LeaseID(id), r.PathValue("cid"), follow,
		frameWriter{f, "stdout"}, frameWriter{f, "stderr"})
	switch {
	case err == nil && !f.started:
		f.mu.Lock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		f.mu.Unlock()
	case err != nil && !f.started:
		s.containerFail(w, r, "lease "+id, err)
	case err != nil && r.Context().Err() == nil:
		_ = f.frame("error", err.Error())
	}
}
