package podman

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// imgPath is the API path of image ref and an action. A reference keeps
// its slashes (libpod's image routes take the rest of the path as the
// name); each part between them is escaped.
func imgPath(ref, action string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/images/" + strings.Join(parts, "/") + action
}

// ImageExists says whether the runtime holds image ref.
func (c *Client) ImageExists(ctx context.Context, ref string) (bool, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: imgPath(ref, "/exists")})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("podman image exists %s: %w", ref, err)
	}
	resp.close()
	return true, nil
}

// Pull pulls image ref from its registry, whether held already or not.
// Podman answers 200 at once and streams its progress; a failure comes
// as the stream's last line.
func (c *Client) Pull(ctx context.Context, ref string) error {
	q := url.Values{"reference": {ref}, "policy": {"always"}, "quiet": {"true"}}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/images/pull", query: q})
	if err != nil {
		return fmt.Errorf("podman pull %s: %w", ref, err)
	}
	defer resp.close()
	if err := readStream(resp.Body); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("podman pull %s: %w", ref, err)
	}
	return nil
}

// readStream reads a progress stream of JSON lines to its end and returns
// the error one of them holds.
func readStream(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	got := false
	for sc.Scan() {
		var line struct {
			Error  string   `json:"error"`
			ID     string   `json:"id"`
			Images []string `json:"images"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("unreadable progress line %q: %w", sc.Text(), err)
		}
		if line.Error != "" {
			return errors.New(line.Error)
		}
		got = got || line.ID != "" || len(line.Images) > 0
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !got {
		return errors.New("the answer ended naming no image")
	}
	return nil
}

// Import makes image ref of a tarball of a root file system (as `podman
// import`), with no registry.
func (c *Client) Import(ctx context.Context, ref string, tarball io.Reader) error {
	q := url.Values{"reference": {ref}}
	var out struct {
		ID string `json:"Id"`
	}
	err := c.call(ctx,
		request{method: http.MethodPost, path: "/images/import", query: q, body: tarball,
			contentType: "application/x-tar"}, &out)
	if err != nil {
		return fmt.Errorf("podman import %s: %w", ref, err)
	}
	if out.ID == "" {
		return fmt.Errorf("podman import %s: the answer names no image", ref)
	}
	return nil
}
