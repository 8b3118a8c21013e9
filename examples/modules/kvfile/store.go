package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sdk/module"
)

// A bucket is a directory under <data>/kv/buckets holding meta.json (its
// labels and creation time) and one file per key.
type bucket struct {
	id      string
	Labels  map[string]string `json:"labels"`
	Created time.Time         `json:"created_at"`
}

func bucketsDir(e module.Env) string { return e.Path("kv", "buckets") }

func listBuckets(e module.Env) ([]bucket, error) {
	entries, err := os.ReadDir(bucketsDir(e))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the buckets: %w", err)
	}
	var list []bucket
	for _, de := range entries {
		if !de.IsDir() {
			continue
		}
		b := bucket{id: de.Name(), Labels: map[string]string{}}
		// A bucket whose meta.json is unreadable is still listed, without
		// labels: svcrun never reaps it, and the owner sees it.
		if data, err := os.ReadFile(filepath.Join(bucketsDir(e), de.Name(), "meta.json")); err == nil {
			_ = json.Unmarshal(data, &b)
		}
		list = append(list, b)
	}
	return list, nil
}

// serve is the daemon: it answers on the socket until SIGTERM.
//
//	GET  /health                        200 once it serves
//	PUT  /buckets/ID?attempt=A          make bucket ID for attempt A, labelled
//	PUT  /buckets/ID/KEY   (body)       set KEY
//	GET  /buckets/ID/KEY                get KEY
func serve() error {
	env, err := module.EnvFrom(os.Getenv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(bucketsDir(env), 0o700); err != nil {
		return err
	}
	sock := socket(env)
	_ = os.Remove(sock) // left by a daemon that was killed
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(env)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func handler(env module.Env) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("PUT /buckets/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, attempt := r.PathValue("id"), r.URL.Query().Get("attempt")
		if err := protocol.ValidObjectID(id); err != nil || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
			http.Error(w, "bad bucket id", http.StatusBadRequest)
			return
		}
		if attempt == "" {
			http.Error(w, "give ?attempt=OARBANK_ATTEMPT_ID", http.StatusBadRequest)
			return
		}
		dir := filepath.Join(bucketsDir(env), id)
		if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
			w.WriteHeader(http.StatusOK)
			return
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		meta, _ := json.Marshal(bucket{Labels: env.Labels(attempt), Created: time.Now().UTC()})
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	key := func(w http.ResponseWriter, r *http.Request) (string, bool) {
		id, k := r.PathValue("id"), r.PathValue("key")
		for _, s := range []string{id, k} {
			if s == "" || s == "." || s == ".." || s == "meta.json" || strings.ContainsAny(s, `/\`) {
				http.Error(w, "bad bucket or key", http.StatusBadRequest)
				return "", false
			}
		}
		if _, err := os.Stat(filepath.Join(bucketsDir(env), id)); err != nil {
			http.Error(w, "no bucket "+id, http.StatusNotFound)
			return "", false
		}
		return filepath.Join(bucketsDir(env), id, k), true
	}
	mux.HandleFunc("PUT /buckets/{id}/{key}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := key(w, r)
		if !ok {
			return
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = os.WriteFile(p, data, 0o600)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("GET /buckets/{id}/{key}", func(w http.ResponseWriter, r *http.Request) {
		if p, ok := key(w, r); ok {
			http.ServeFile(w, r, p)
		}
	})
	return mux
}
