// Command dify-mock-image writes dify-mock's container image without a
// container daemon: an OCI image layout (a folder, or the same as one tar
// file that `docker load`, `podman load` and `skopeo copy oci-archive:…`
// read) holding one image per Linux platform, built from the static
// dify-mock binaries GoReleaser (or `go build`) produced.
//
// The image is one layer on an empty base: the binary at
// /usr/local/bin/dify-mock, /etc/passwd and /etc/group naming the non-root
// user 65532 ("nonroot") it runs as, its home as the working folder and a
// world-writable /tmp. It serves 0.0.0.0:5001 inside the container with the
// remote-listen opt-in set explicitly (DIFY_MOCK_ALLOW_REMOTE=true), and its
// HEALTHCHECK is `dify-mock health` (the image has no shell or curl).
//
// Usage:
//
//	dify-mock-image --version 1.2.3 --binary linux/amd64=PATH [--binary linux/arm64=PATH] --out DIR [--tar FILE]
//	dify-mock-image --version 1.2.3 --dist dist --out DIR        (GoReleaser's dist/artifacts.json)
//
// Every byte depends only on the inputs: file times are --created (default:
// SOURCE_DATE_EPOCH, else the Unix epoch), entries are sorted and gzip
// carries no name or time, so two builds of one commit are identical.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// What the image is; image_test.go reads these back from the written image.
const (
	binaryPath  = "/usr/local/bin/dify-mock"
	user        = "65532:65532"
	uid, gid    = 65532, 65532
	home        = "/home/nonroot"
	listenAddr  = "0.0.0.0:5001"
	exposedPort = "5001/tcp"
	sourceURL   = "https://github.com/difyops/terraform-provider-dify"
	// defaultRepository names the image in index.json, so `docker load`
	// tags it (io.containerd.image.name) as REPOSITORY:VERSION.
	defaultRepository = "ghcr.io/difyops/dify-mock"
)

// OCI media types (image-spec v1.1).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type index struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// imageConfig is the OCI image configuration. Healthcheck is Docker's
// extension of it (the OCI spec has no field for it): Docker uses it, and
// fills the fields a container leaves unset from it (so a CI service that
// sets only --health-interval still runs this exec-form check); Podman
// ignores it in OCI images, so the compose example names the same command.
type imageConfig struct {
	Created      string       `json:"created"`
	Architecture string       `json:"architecture"`
	OS           string       `json:"os"`
	Variant      string       `json:"variant,omitempty"`
	Config       runConfig    `json:"config"`
	RootFS       rootFS       `json:"rootfs"`
	History      []historyRow `json:"history"`
}

type runConfig struct {
	User         string              `json:"User"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Env          []string            `json:"Env"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
	WorkingDir   string              `json:"WorkingDir"`
	Labels       map[string]string   `json:"Labels"`
	StopSignal   string              `json:"StopSignal"`
	Healthcheck  *healthcheck        `json:"Healthcheck,omitempty"`
}

// healthcheck durations are nanoseconds, as Docker stores them.
type healthcheck struct {
	Test        []string      `json:"Test"`
	Interval    time.Duration `json:"Interval"`
	Timeout     time.Duration `json:"Timeout"`
	StartPeriod time.Duration `json:"StartPeriod"`
	Retries     int           `json:"Retries"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type historyRow struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// build is what one run makes.
type build struct {
	version, revision, repository string
	created                       time.Time
	binaries                      []platformBinary
}

type platformBinary struct {
	platform platform
	path     string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dify-mock-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		b       build
		bins    []string
		dist    = fs.String("dist", "", "GoReleaser's dist folder: take the linux dify-mock binaries from its artifacts.json")
		out     = fs.String("out", "", "write the OCI image layout into this folder (required; emptied first)")
		tarPath = fs.String("tar", "", "also write the layout as one tar file (docker load / podman load / skopeo oci-archive:)")
		created = fs.String("created", "", "image and file time, RFC 3339 (default: SOURCE_DATE_EPOCH, else 1970-01-01)")
	)
	fs.StringVar(&b.version, "version", "", "the version (a label, and the tag in index.json; required)")
	fs.StringVar(&b.revision, "revision", "", "the source commit (label org.opencontainers.image.revision)")
	fs.StringVar(&b.repository, "repository", defaultRepository, "image name docker load tags it with")
	fs.Func("binary", "linux/ARCH[/VARIANT]=PATH of a static dify-mock binary (repeatable)", func(v string) error {
		bins = append(bins, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "dify-mock-image: "+format+"\n", a...)
		return code
	}
	if b.version == "" || *out == "" {
		return fail(2, "--version and --out are required")
	}
	if (*dist == "") == (len(bins) == 0) {
		return fail(2, "give --dist or at least one --binary, not both")
	}
	var err error
	if b.created, err = createdTime(*created, os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return fail(2, "%v", err)
	}
	if *dist != "" {
		b.binaries, err = fromDist(*dist)
	} else {
		b.binaries, err = parseBinaries(bins)
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	ref, err := writeLayout(*out, b)
	if err != nil {
		return fail(1, "%v", err)
	}
	if *tarPath != "" {
		if err := tarFolder(*out, *tarPath, b.created); err != nil {
			return fail(1, "%v", err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s (%s", *out, ref)
	for _, pb := range b.binaries {
		fmt.Fprintf(stdout, ", %s", platformString(pb.platform))
	}
	fmt.Fprintln(stdout, ")")
	return 0
}

func createdTime(flagValue, epoch string) (time.Time, error) {
	switch {
	case flagValue != "":
		t, err := time.Parse(time.RFC3339, flagValue)
		if err != nil {
			return time.Time{}, fmt.Errorf("--created %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", flagValue)
		}
		return t.UTC(), nil
	case epoch != "":
		s, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", epoch)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

func parseBinaries(specs []string) ([]platformBinary, error) {
	var out []platformBinary
	for _, s := range specs {
		plat, path, ok := strings.Cut(s, "=")
		parts := strings.Split(plat, "/")
		if !ok || path == "" || len(parts) < 2 || len(parts) > 3 || parts[0] != "linux" {
			return nil, fmt.Errorf("--binary %q: want linux/ARCH[/VARIANT]=PATH", s)
		}
		p := platform{OS: parts[0], Architecture: parts[1]}
		if len(parts) == 3 {
			p.Variant = parts[2]
		}
		out = append(out, platformBinary{platform: p, path: path})
	}
	return out, nil
}

// fromDist picks the linux amd64 and arm64 dify-mock binaries out of
// GoReleaser's artifacts.json (paths there are relative to the folder
// GoReleaser ran in, the parent of dist).
func fromDist(dist string) ([]platformBinary, error) {
	raw, err := os.ReadFile(filepath.Join(dist, "artifacts.json"))
	if err != nil {
		return nil, err
	}
	var artifacts []struct {
		Path   string `json:"path"`
		GOOS   string `json:"goos"`
		GOARCH string `json:"goarch"`
		Type   string `json:"type"`
		Extra  struct {
			ID string `json:"ID"`
		} `json:"extra"`
	}
	if err := json.Unmarshal(raw, &artifacts); err != nil {
		return nil, fmt.Errorf("%s/artifacts.json: %v", dist, err)
	}
	var out []platformBinary
	for _, a := range artifacts {
		if a.Type != "Binary" || a.Extra.ID != "dify-mock" || a.GOOS != "linux" || (a.GOARCH != "amd64" && a.GOARCH != "arm64") {
			continue
		}
		path := a.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(filepath.Clean(dist)), path)
		}
		p := platform{OS: "linux", Architecture: a.GOARCH}
		if a.GOARCH == "arm64" {
			p.Variant = "v8"
		}
		out = append(out, platformBinary{platform: p, path: path})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s/artifacts.json has no linux/amd64 or linux/arm64 dify-mock binary (build id dify-mock)", dist)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].platform.Architecture < out[j].platform.Architecture })
	return out, nil
}

func platformString(p platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// writeLayout writes the OCI image layout: oci-layout, index.json naming one
// image index (the multi-platform image) and blobs/sha256/…. It returns the
// image reference.
func writeLayout(dir string, b build) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return "", err
	}
	put := func(mediaType string, data []byte) (descriptor, error) {
		sum := sha256.Sum256(data)
		d := descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
		return d, os.WriteFile(filepath.Join(dir, "blobs", "sha256", hex.EncodeToString(sum[:])), data, 0o644)
	}
	putJSON := func(mediaType string, v any) (descriptor, error) {
		data, err := json.Marshal(v)
		if err != nil {
			return descriptor{}, err
		}
		return put(mediaType, data)
	}
	created := b.created.Format(time.RFC3339)
	labels := map[string]string{
		"org.opencontainers.image.title":         "dify-mock",
		"org.opencontainers.image.description":   "A local stand-in for the Dify Agent app API: recorded chat streams replayed with their original timing, stateful endpoints, fault injection.",
		"org.opencontainers.image.version":       b.version,
		"org.opencontainers.image.created":       created,
		"org.opencontainers.image.source":        sourceURL,
		"org.opencontainers.image.url":           sourceURL,
		"org.opencontainers.image.documentation": sourceURL + "/blob/main/docs/mock/running.md",
		"org.opencontainers.image.licenses":      "MPL-2.0",
	}
	if b.revision != "" {
		labels["org.opencontainers.image.revision"] = b.revision
	}
	var manifests []descriptor
	for _, pb := range b.binaries {
		bin, err := os.ReadFile(pb.path)
		if err != nil {
			return "", err
		}
		layer, diffID, err := rootLayer(bin, b.created)
		if err != nil {
			return "", err
		}
		layerDesc, err := put(mediaTypeLayer, layer)
		if err != nil {
			return "", err
		}
		cfg := imageConfig{
			Created: created, Architecture: pb.platform.Architecture, OS: pb.platform.OS, Variant: pb.platform.Variant,
			Config: runConfig{
				User:         user,
				ExposedPorts: map[string]struct{}{exposedPort: {}},
				Env: []string{
					"PATH=/usr/local/bin",
					"DIFY_MOCK_ADDR=" + listenAddr,
					// Inside a container the mock must listen beyond loopback
					// for a published port to reach it; say so explicitly.
					"DIFY_MOCK_ALLOW_REMOTE=true",
				},
				Entrypoint: []string{binaryPath},
				Cmd:        []string{"serve"},
				WorkingDir: home,
				Labels:     labels,
				StopSignal: "SIGTERM",
				Healthcheck: &healthcheck{
					Test:     []string{"CMD", binaryPath, "health"},
					Interval: 10 * time.Second, Timeout: 3 * time.Second, StartPeriod: 5 * time.Second, Retries: 3,
				},
			},
			RootFS:  rootFS{Type: "layers", DiffIDs: []string{diffID}},
			History: []historyRow{{Created: created, CreatedBy: "dify-mock-image (static dify-mock " + b.version + ", non-root user " + user + ")"}},
		}
		cfgDesc, err := putJSON(mediaTypeConfig, cfg)
		if err != nil {
			return "", err
		}
		m := manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: cfgDesc, Layers: []descriptor{layerDesc},
			Annotations: map[string]string{"org.opencontainers.image.created": created, "org.opencontainers.image.version": b.version}}
		md, err := putJSON(mediaTypeManifest, m)
		if err != nil {
			return "", err
		}
		p := pb.platform
		md.Platform = &p
		manifests = append(manifests, md)
	}
	imageIndex, err := putJSON(mediaTypeIndex, index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: manifests,
		Annotations: map[string]string{"org.opencontainers.image.version": b.version, "org.opencontainers.image.source": sourceURL}})
	if err != nil {
		return "", err
	}
	ref := b.repository + ":" + b.version
	imageIndex.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": b.version, // skopeo/podman: oci-archive:FILE:VERSION
		"io.containerd.image.name":          ref,       // docker load's tag
	}
	top, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{imageIndex}})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), top, 0o644); err != nil {
		return "", err
	}
	return ref, os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// rootLayer is the image's only layer, gzipped, and the digest of the
// uncompressed tar (the config's diff_id).
func rootLayer(binary []byte, mtime time.Time) (gz []byte, diffID string, err error) {
	type entry struct {
		name    string
		mode    int64
		owner   int
		content []byte
		dir     bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, content: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, content: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o750, owner: uid, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/dify-mock", mode: 0o755, content: binary},
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.owner, Gid: e.owner, ModTime: mtime, Format: tar.FormatPAX}
		if e.owner != 0 {
			h.Uname, h.Gname = "nonroot", "nonroot"
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.content))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(e.content); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// tarFolder writes the layout folder as one tar (sorted, fixed times).
func tarFolder(dir, dest string, mtime time.Time) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := os.Stat(p)
		if err != nil {
			f.Close()
			return err
		}
		h := &tar.Header{Name: rel, Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg, Size: info.Size(), Format: tar.FormatPAX}
		if info.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = rel+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return err
		}
		if !info.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Close()
				return err
			}
			if _, err := tw.Write(data); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
