package podmantest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
)

// ImageName is the repository of the test image; its tag is a hash of
// its content.
const ImageName = "localhost/svcrun-podmantest"

// ImageBinary is the path of the test image's one file, the helper of
// ./testimage: a container's command starts with it ("/testimage sleep 5").
const ImageBinary = "/testimage"

// TestImage returns the full reference of the test image in rt, imported
// (offline, through the API) the first time a test of the service asks.
func TestImage(t testing.TB, rt *Runtime) string {
	t.Helper()
	rt.svc.mu.Lock()
	defer rt.svc.mu.Unlock()
	if rt.svc.image != "" {
		return rt.svc.image
	}
	tarball, err := buildImage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(tarball)
	ref := ImageName + ":" + hex.EncodeToString(sum[:])[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ok, err := rt.Client.ImageExists(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if err := rt.Client.Import(ctx, ref, bytes.NewReader(tarball)); err != nil {
			t.Fatal(err)
		}
	}
	rt.svc.image = ref
	return ref
}

// buildImage builds the static helper and returns a tarball holding only
// it, at /testimage, with fixed times so that its hash is its content's.
func buildImage(tmp string) ([]byte, error) {
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return nil, fmt.Errorf("podmantest: the test image is built with go, not found: %w", err)
		}
	}
	out := filepath.Join(tmp, "testimage")
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, "github.com/oarbank/svcrun/internal/podmantest/testimage")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("podmantest: build the test image's helper: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("podmantest: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: ImageBinary[1:], Mode: 0o755, Size: int64(len(bin)),
		Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Cycle is a container's whole life straight through the client: create
// (of image, with labels, running "/testimage exit 0"), start, wait,
// remove. The benchmarks of the client and of the broker measure it.
func Cycle(ctx context.Context, c *podman.Client, image string, labels map[string]string) error {
	id, err := c.Create(ctx,
		podman.Spec{Image: image, Command: []string{ImageBinary, "exit", "0"}, Labels: labels, MemoryBytes: 64 << 20,
			Pids: 64})
	if err != nil {
		return err
	}
	if err := startWait(ctx, c, id); err != nil {
		c.Remove(context.WithoutCancel(ctx), id)
		return err
	}
	return c.Remove(ctx, id)
}

// startWait starts container id and waits for it to exit 0.
func startWait(ctx context.Context, c *podman.Client, id string) error {
	if err := c.Start(ctx, id); err != nil {
		return err
	}
	code, err := c.Wait(ctx, id)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("podmantest: cycle of %s: exit code %d, not 0", id, code)
	}
	return nil
}
