package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const testVersion = "9.9.9-imagetest"

// buildLinuxBinary builds dify-mock for linux/GOARCH as the release does
// (static, trimmed, version stamped).
func buildLinuxBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds dify-mock; skipped with -short")
	}
	out := filepath.Join(t.TempDir(), "dify-mock")
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+testVersion+" -X main.commit=abc1234",
		"-o", out, "github.com/difyops/terraform-provider-dify/mockserver/cmd/dify-mock")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	return out
}

// ociArchive is an image layout read back from its tar file; every blob
// fetched through it is checked against its descriptor's digest and size.
type ociArchive struct {
	t     *testing.T
	files map[string][]byte
}

func readArchive(t *testing.T, path string) *ociArchive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &ociArchive{t: t, files: map[string][]byte{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			a.files[h.Name], _ = io.ReadAll(tr)
		}
	}
}

func (a *ociArchive) blob(d descriptor, wantType string) []byte {
	a.t.Helper()
	if d.MediaType != wantType {
		a.t.Fatalf("descriptor %s: media type %q, want %q", d.Digest, d.MediaType, wantType)
	}
	hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
	if !ok {
		a.t.Fatalf("digest %q is not sha256", d.Digest)
	}
	data, ok := a.files["blobs/sha256/"+hexDigest]
	if !ok {
		a.t.Fatalf("blob %s missing", d.Digest)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
		a.t.Fatalf("blob %s: content does not match its descriptor (size %d, want %d)", d.Digest, len(data), d.Size)
	}
	return data
}

func (a *ociArchive) json(d descriptor, wantType string, v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.blob(d, wantType), v); err != nil {
		a.t.Fatal(err)
	}
}

type layerFile struct {
	hdr  *tar.Header
	data []byte
}

func TestImageReadsBackAndItsBinaryServes(t *testing.T) {
	bin := buildLinuxBinary(t)
	work := t.TempDir()
	archive := filepath.Join(work, "image.tar")
	args := []string{"--version", testVersion, "--revision", "abc1234", "--created", "2026-01-02T03:04:05Z",
		"--binary", "linux/" + runtime.GOARCH + "=" + bin, "--out", filepath.Join(work, "layout"), "--tar", archive}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	a := readArchive(t, archive)

	// Layout → image index → this platform's manifest → config and layer.
	if string(a.files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("oci-layout: %q", a.files["oci-layout"])
	}
	var top index
	if err := json.Unmarshal(a.files["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/difyops/dify-mock:"+testVersion ||
		top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != testVersion {
		t.Fatalf("index.json: %+v", top)
	}
	var idx index
	a.json(top.Manifests[0], mediaTypeIndex, &idx)
	if len(idx.Manifests) != 1 || idx.Manifests[0].Platform == nil ||
		idx.Manifests[0].Platform.OS != "linux" || idx.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("image index: %+v", idx)
	}
	var m manifest
	a.json(idx.Manifests[0], mediaTypeManifest, &m)
	var cfg imageConfig
	a.json(m.Config, mediaTypeConfig, &cfg)

	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/dify-mock"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/home/nonroot" {
		t.Errorf("user %q, working dir %q: want the non-root user and its home", c.User, c.WorkingDir)
	}
	if _, ok := c.ExposedPorts["5001/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 5001/tcp", c.ExposedPorts)
	}
	for _, want := range []string{"DIFY_MOCK_ADDR=0.0.0.0:5001", "DIFY_MOCK_ALLOW_REMOTE=true"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("env %q lacks %s", c.Env, want)
		}
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title":    "dify-mock",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": "abc1234",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
		"org.opencontainers.image.source":   "https://github.com/difyops/terraform-provider-dify",
		"org.opencontainers.image.licenses": "MPL-2.0",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/usr/local/bin/dify-mock", "health"}) ||
		c.Healthcheck.Interval <= 0 || c.Healthcheck.Timeout <= 0 {
		t.Errorf("healthcheck %+v", c.Healthcheck)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || cfg.Created != "2026-01-02T03:04:05Z" {
		t.Errorf("config platform %s/%s created %s", cfg.OS, cfg.Architecture, cfg.Created)
	}

	// The layer: its diff_id, the files, owners and modes.
	if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("layers %d, diff_ids %d", len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.blob(m.Layers[0], mediaTypeLayer)))
	if err != nil {
		t.Fatal(err)
	}
	rawLayer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(rawLayer); "sha256:"+hex.EncodeToString(sum[:]) != cfg.RootFS.DiffIDs[0] {
		t.Fatal("diff_id does not match the uncompressed layer")
	}
	files := map[string]layerFile{}
	tr := tar.NewReader(bytes.NewReader(rawLayer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = layerFile{h, data}
	}
	exe := files["usr/local/bin/dify-mock"]
	if exe.hdr == nil || exe.hdr.Mode != 0o755 || exe.hdr.Uid != 0 {
		t.Fatalf("binary entry %+v", exe.hdr)
	}
	if f := files["home/nonroot/"]; f.hdr == nil || f.hdr.Uid != 65532 || f.hdr.Typeflag != tar.TypeDir {
		t.Errorf("home: %+v", f.hdr)
	}
	if f := files["tmp/"]; f.hdr == nil || f.hdr.Mode != 0o1777 {
		t.Errorf("tmp: %+v", f.hdr)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("etc/passwd: %q", files["etc/passwd"].data)
	}
	for name, f := range files {
		if f.hdr.Mode&0o6000 != 0 {
			t.Errorf("%s is setuid/setgid", name)
		}
	}

	if runtime.GOOS != "linux" {
		t.Skip("the extracted linux binary runs only on linux")
	}
	runExtracted(t, exe.data, c)
}

// runExtracted runs the image's binary as the image would (entrypoint, cmd
// and env), except that it listens on 127.0.0.1:0, then runs the
// HEALTHCHECK command against it.
func runExtracted(t *testing.T, binary []byte, c runConfig) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "dify-mock")
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").Output()
	if want := "dify-mock " + testVersion + " (commit abc1234, linux/" + runtime.GOARCH + ")\n"; err != nil || string(out) != want {
		t.Fatalf("--version: %q, %v; want %q", out, err, want)
	}
	localize := func(args []string) []string {
		args = slices.Clone(args)
		for i, a := range args {
			if a == binaryPath {
				args[i] = exe
			}
		}
		return args
	}
	env := func(addr string) []string {
		var e []string
		for _, kv := range c.Env {
			if strings.HasPrefix(kv, "PATH=") {
				continue
			}
			if strings.HasPrefix(kv, "DIFY_MOCK_ADDR=") {
				kv = "DIFY_MOCK_ADDR=" + addr
			}
			e = append(e, kv)
		}
		return append(e, "HOME="+dir)
	}
	argv := localize(append(slices.Clone(c.Entrypoint), c.Cmd...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, argv[0], argv[1:]...)
	srv.Env = env("127.0.0.1:0")
	srv.Dir = dir
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	baseRE := regexp.MustCompile(`API base URL  http://(127\.0\.0\.1:\d+)/v1`)
	var addr string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := baseRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatalf("no banner; stderr: %s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)

	resp, err := http.Get("http://" + addr + "/v1/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/: %d", resp.StatusCode)
	}
	// The HEALTHCHECK as the image declares it (Test[0] is "CMD").
	hc := localize(c.Healthcheck.Test[1:])
	check := exec.CommandContext(ctx, hc[0], hc[1:]...)
	check.Env = env(addr)
	if msg, err := check.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck %q: %v\n%s", hc, err, msg)
	}

	if err := srv.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve after SIGINT: %v; stderr: %s", err, stderr.String())
	}
	// Down now: the same check fails.
	check = exec.CommandContext(ctx, hc[0], hc[1:]...)
	check.Env = env(addr)
	if err := check.Run(); err == nil {
		t.Fatal("healthcheck passed against a stopped server")
	}
}

func TestImageIsReproducibleAndReadsGoReleaserArtifacts(t *testing.T) {
	work := t.TempDir()
	// Any bytes do for the layout; the binary is not run here.
	amd, arm := filepath.Join(work, "amd64"), filepath.Join(work, "arm64")
	for _, p := range []string{amd, arm} {
		if err := os.WriteFile(p, []byte("binary for "+filepath.Base(p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dist := filepath.Join(work, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	artifacts := `[
	 {"name":"dify-mock","path":"amd64","goos":"linux","goarch":"amd64","type":"Binary","extra":{"ID":"dify-mock"}},
	 {"name":"dify-mock","path":"` + arm + `","goos":"linux","goarch":"arm64","type":"Binary","extra":{"ID":"dify-mock"}},
	 {"name":"dify-mock","path":"nope","goos":"darwin","goarch":"arm64","type":"Binary","extra":{"ID":"dify-mock"}},
	 {"name":"terraform-provider-dify","path":"nope","goos":"linux","goarch":"amd64","type":"Binary","extra":{"ID":"provider"}},
	 {"name":"dify-mock.zip","path":"nope","goos":"linux","goarch":"amd64","type":"Archive","extra":{"ID":"dify-mock"}}
	]`
	if err := os.WriteFile(filepath.Join(dist, "artifacts.json"), []byte(artifacts), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string) []byte {
		var stdout, stderr bytes.Buffer
		tarFile := filepath.Join(work, name+".tar")
		code := run([]string{"--version", "1.0.0", "--dist", dist, "--out", filepath.Join(work, name), "--tar", tarFile}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		data, err := os.ReadFile(tarFile)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	first, second := build("one"), build("two")
	if !bytes.Equal(first, second) {
		t.Fatal("two builds from the same inputs differ")
	}
	tarFile := filepath.Join(work, "one.tar")
	a := readArchive(t, tarFile)
	var top, idx index
	if err := json.Unmarshal(a.files["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	a.json(top.Manifests[0], mediaTypeIndex, &idx)
	var plats []string
	for _, d := range idx.Manifests {
		plats = append(plats, platformString(*d.Platform))
	}
	if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64/v8"}) {
		t.Fatalf("platforms %v", plats)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--version", "1.0.0", "--out", t.TempDir()},
		{"--version", "1.0.0", "--out", t.TempDir(), "--binary", "darwin/arm64=x"},
		{"--version", "1.0.0", "--out", t.TempDir(), "--binary", "linux/amd64"},
		{"--version", "1.0.0", "--out", t.TempDir(), "--binary", "linux/amd64=x", "--created", "yesterday"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
