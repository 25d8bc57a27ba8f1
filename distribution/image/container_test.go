package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The examples run in a real container runtime: scripts/container-test.sh
// installs Podman, loads the image `make image` built and sets
//
//	DIFY_MOCK_CONTAINER_CLI  the runtime's command (podman, or docker)
//	DIFY_MOCK_IMAGE          the loaded image's reference
//	DIFY_MOCK_IMAGE_TAR      the archive it was loaded from
//
// Each example is started the way its tool starts it: the compose
// service's image, environment, ports and healthcheck; the GitHub Actions
// service's env, ports and `options` as `docker create` reads them; every
// `docker run` line of docs/mock/running.md. Host ports are rewritten to free
// loopback ports so parallel runs do not collide.
func containerRuntime(t *testing.T) (cli, image string) {
	t.Helper()
	cli, image = os.Getenv("DIFY_MOCK_CONTAINER_CLI"), os.Getenv("DIFY_MOCK_IMAGE")
	if cli == "" || image == "" {
		t.Skip("no container runtime: run scripts/container-test.sh (make container-test)")
	}
	return cli, image
}

// container is one started container, removed when the test ends.
type container struct {
	t    *testing.T
	cli  string
	name string
	port int // the free loopback host port published to the container's 5001
}

var containerSeq int

// runContainer runs `CLI run -d ARGS…` (ARGS end with the image and its
// command); port is the loopback host port ARGS publish, 0 for none.
func runContainer(t *testing.T, cli string, port int, args ...string) *container {
	t.Helper()
	containerSeq++
	c := &container{t: t, cli: cli, port: port, name: fmt.Sprintf("dify-mock-test-%d-%d", os.Getpid(), containerSeq)}
	out, err := exec.Command(cli, append([]string{"run", "-d", "--name", c.name}, args...)...).CombinedOutput()
	t.Cleanup(func() { _ = exec.Command(cli, "rm", "-f", "-t", "0", c.name).Run() })
	if err != nil {
		t.Fatalf("%s run %q: %v\n%s", cli, args, err, out)
	}
	return c
}

// healthStatus is what the Actions runner reads to decide whether a service
// is ready: `docker inspect --format {{.State.Health.Status}}`.
func (c *container) healthStatus() string {
	c.t.Helper()
	out, err := exec.Command(c.cli, "inspect", "--format", "{{.State.Health.Status}}", c.name).Output()
	if err != nil {
		c.t.Fatalf("inspect %s: %v", c.name, err)
	}
	return strings.TrimSpace(string(out))
}

// waitHealth drives the container's health check until it leaves
// "starting", and returns the final status. Docker's daemon runs the check
// every interval by itself; Podman needs a systemd timer for that, which
// this machine may lack, so the test plays the timer's part with
// `podman healthcheck run` (the command the timer runs). The runner's own
// loop (ContainerHealthcheck) is the same: poll while "starting", then the
// job goes on only when the status is "healthy".
func (c *container) waitHealth(interval time.Duration) string {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.HasSuffix(c.cli, "podman") {
			_ = exec.Command(c.cli, "healthcheck", "run", c.name).Run()
		}
		status := c.healthStatus()
		if status != "starting" || time.Now().After(deadline) {
			return status
		}
		time.Sleep(interval)
	}
}

func (c *container) logs() string {
	out, _ := exec.Command(c.cli, "logs", c.name).CombinedOutput()
	return string(out)
}

// get fetches path through the published port and returns the status and
// body; the container must answer within a few seconds of being healthy.
func (c *container) get(path string, header http.Header) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", c.port, path), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var lastErr error
	for range 50 {
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(body)
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("GET %s through the published port: %v\n%s", path, lastErr, c.logs())
	return 0, ""
}

// assertServes checks that the mock answers GET /v1/ as Dify does.
func (c *container) assertServes() {
	c.t.Helper()
	code, body := c.get("/v1/", nil)
	var hello struct {
		APIVersion string `json:"api_version"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &hello) != nil || hello.APIVersion != "v1" {
		c.t.Fatalf("GET /v1/: %d %s\n%s", code, body, c.logs())
	}
}

// assertStopsCleanly stops the container as `docker compose down` does
// (SIGTERM to the mock, its PID 1) and requires a clean exit, well before
// the runtime's 10 s kill.
func (c *container) assertStopsCleanly() {
	c.t.Helper()
	start := time.Now()
	if out, err := exec.Command(c.cli, "stop", "-t", "10", c.name).CombinedOutput(); err != nil {
		c.t.Fatalf("stop: %v %s", err, out)
	}
	took := time.Since(start)
	out, err := exec.Command(c.cli, "inspect", "--format", "{{.State.ExitCode}}", c.name).Output()
	if err != nil || strings.TrimSpace(string(out)) != "0" || took > 5*time.Second {
		c.t.Fatalf("stopped after %v with exit code %q (%v), want 0 within 5s\n%s", took, out, err, c.logs())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// publish rewrites a port mapping of an example ("5001:5001" or
// "127.0.0.1:5001:5001") to the same container port on a free loopback host
// port, and returns the new mapping and that port.
func publish(t *testing.T, mapping string) (string, int) {
	t.Helper()
	parts := strings.Split(mapping, ":")
	if parts[len(parts)-1] != strings.TrimSuffix(exposedPort, "/tcp") {
		t.Fatalf("port mapping %q does not publish the image's port %s", mapping, exposedPort)
	}
	port := freePort(t)
	return fmt.Sprintf("127.0.0.1:%d:%s", port, parts[len(parts)-1]), port
}

// runService starts a service of an example: its one port mapping (on a
// free loopback port), its environment and its resolved health check.
func runService(t *testing.T, cli, image string, ports []string, env map[string]string, h healthcheck) *container {
	t.Helper()
	if len(ports) != 1 {
		t.Fatalf("service ports %q: want one mapping", ports)
	}
	mapping, port := publish(t, ports[0])
	args := []string{"-p", mapping}
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	return runContainer(t, cli, port, append(append(args, healthFlags(t, h)...), image)...)
}

// imageHealthcheck is the HEALTHCHECK of the loaded image, read from the
// archive `make image` wrote (Podman drops it from OCI images, Docker keeps it).
func imageHealthcheck(t *testing.T) healthcheck {
	t.Helper()
	a, idx := loadedImageIndex(t)
	var m manifest
	a.json(idx.Manifests[0], mediaTypeManifest, &m)
	var cfg imageConfig
	a.json(m.Config, mediaTypeConfig, &cfg)
	if cfg.Config.Healthcheck == nil {
		t.Fatal("the image has no HEALTHCHECK")
	}
	return *cfg.Config.Healthcheck
}

// loadedImageIndex reads the archive DIFY_MOCK_IMAGE_TAR names and returns
// it with its multi-platform image index.
func loadedImageIndex(t *testing.T) (*ociArchive, index) {
	t.Helper()
	path := os.Getenv("DIFY_MOCK_IMAGE_TAR")
	if path == "" {
		t.Fatal("DIFY_MOCK_IMAGE_TAR is not set")
	}
	a := readArchive(t, path)
	var top, idx index
	if err := json.Unmarshal(a.files["index.json"], &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, top)
	}
	a.json(top.Manifests[0], mediaTypeIndex, &idx)
	return a, idx
}

// healthFlags turns a resolved health check into the runtime's flags. An
// exec-form test ("CMD", …) becomes Podman's JSON-array --health-cmd (Docker's
// CLI has no exec form for the flag, which is why the examples must not set
// one); a "CMD-SHELL" test stays a string, which both run with /bin/sh -c.
func healthFlags(t *testing.T, h healthcheck) []string {
	t.Helper()
	var cmd string
	switch {
	case len(h.Test) > 1 && h.Test[0] == "CMD":
		b, _ := json.Marshal(h.Test[1:])
		cmd = string(b)
	case len(h.Test) == 2 && h.Test[0] == "CMD-SHELL":
		cmd = h.Test[1]
	default:
		t.Fatalf("health check test %q: not CMD or CMD-SHELL", h.Test)
	}
	flags := []string{"--health-cmd", cmd}
	for flag, d := range map[string]time.Duration{"--health-interval": h.Interval, "--health-timeout": h.Timeout, "--health-start-period": h.StartPeriod} {
		if d > 0 {
			flags = append(flags, flag, d.String())
		}
	}
	if h.Retries > 0 {
		flags = append(flags, "--health-retries", strconv.Itoa(h.Retries))
	}
	return flags
}

// dockerHealthOptions reads the health flags of a `docker create` options
// string as Docker's CLI does (cli/command/container/opts.go): --health-cmd
// is always stored as ["CMD-SHELL", cmd]; the other flags set only their own
// field. Any other flag fails the test, so an option the test does not model
// cannot slip into the example unnoticed.
func dockerHealthOptions(t *testing.T, options string) *healthcheck {
	t.Helper()
	words := shellWords(t, options)
	var h *healthcheck
	set := func() *healthcheck {
		if h == nil {
			h = &healthcheck{}
		}
		return h
	}
	for i := 0; i < len(words); i++ {
		flag, value, hasValue := strings.Cut(words[i], "=")
		if !hasValue {
			if i+1 >= len(words) {
				t.Fatalf("options %q: %s needs a value", options, flag)
			}
			i++
			value = words[i]
		}
		duration := func() time.Duration {
			d, err := time.ParseDuration(value)
			if err != nil {
				t.Fatalf("options: %s %q: %v", flag, value, err)
			}
			return d
		}
		switch flag {
		case "--health-cmd":
			set().Test = []string{"CMD-SHELL", value}
		case "--health-interval":
			set().Interval = duration()
		case "--health-timeout":
			set().Timeout = duration()
		case "--health-start-period":
			set().StartPeriod = duration()
		case "--health-retries":
			n, err := strconv.Atoi(value)
			if err != nil {
				t.Fatalf("options: --health-retries %q", value)
			}
			set().Retries = n
		default:
			t.Fatalf("options %q: %s is not modelled by this test", options, flag)
		}
	}
	return h
}

// mergeHealth is the daemon's rule when it creates a container (moby's
// daemon/commit.go, merge): without health settings the image's check is
// used; with some, every field left unset (an empty test, a zero duration)
// comes from the image.
func mergeHealth(user *healthcheck, img healthcheck) healthcheck {
	if user == nil {
		return img
	}
	h := *user
	if len(h.Test) == 0 {
		h.Test = img.Test
	}
	if h.Interval == 0 {
		h.Interval = img.Interval
	}
	if h.Timeout == 0 {
		h.Timeout = img.Timeout
	}
	if h.StartPeriod == 0 {
		h.StartPeriod = img.StartPeriod
	}
	if h.Retries == 0 {
		h.Retries = img.Retries
	}
	return h
}

// shellWords splits a command line as a POSIX shell would for the forms the
// docs use: blanks, "double" and 'single' quotes, $PWD, and # comments.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestComposeServiceTurnsHealthyAndServes(t *testing.T) {
	cli, image := containerRuntime(t)
	var compose struct {
		Services map[string]struct {
			Ports       []string          `yaml:"ports"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test     []string `yaml:"test"`
				Interval string   `yaml:"interval"`
				Timeout  string   `yaml:"timeout"`
				Retries  int      `yaml:"retries"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	readYAML(t, "docker-compose.yml", &compose)
	svc := compose.Services["dify-mock"]
	interval, err1 := time.ParseDuration(svc.Healthcheck.Interval)
	timeout, err2 := time.ParseDuration(svc.Healthcheck.Timeout)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	h := healthcheck{Test: svc.Healthcheck.Test, Interval: interval, Timeout: timeout, Retries: svc.Healthcheck.Retries}

	started := runService(t, cli, image, svc.Ports, svc.Environment, h)
	if status := started.waitHealth(interval); status != "healthy" {
		t.Fatalf("compose service ended %q, want healthy\n%s", status, started.logs())
	}
	started.assertServes()
	// Through a published port the console is not loopback to the mock:
	// without DIFY_MOCK_ADMIN_TOKEN it refuses (the docs say to set one).
	if code, body := started.get("/__mock/", nil); code != http.StatusForbidden || !strings.Contains(body, "admin_token_required") {
		t.Fatalf("console without a token through the published port: %d %s", code, body)
	}
	started.assertStopsCleanly()
}

func TestActionsServiceTurnsHealthyAndServes(t *testing.T) {
	cli, image := containerRuntime(t)
	var workflow struct {
		Jobs map[string]struct {
			Services map[string]struct {
				Ports   []string          `yaml:"ports"`
				Env     map[string]string `yaml:"env"`
				Options string            `yaml:"options"`
			} `yaml:"services"`
		} `yaml:"jobs"`
	}
	readYAML(t, "github-actions.yml", &workflow)
	svc := workflow.Jobs["test"].Services["dify-mock"]
	img := imageHealthcheck(t)

	t.Run("as the runner starts it", func(t *testing.T) {
		h := mergeHealth(dockerHealthOptions(t, svc.Options), img)
		if h.Test[0] != "CMD" {
			t.Fatalf("the service's health check resolves to %q: a shell-less image cannot run it", h.Test)
		}
		started := runService(t, cli, image, svc.Ports, svc.Env, h)
		if status := started.waitHealth(h.Interval); status != "healthy" {
			t.Fatalf("service ended %q, want healthy (the runner fails the job otherwise)\n%s", status, started.logs())
		}
		started.assertServes()
	})

	// The control: the check the example used to set (a --health-cmd string,
	// so CMD-SHELL) ends unhealthy in this image although the server answers,
	// so the test above would catch it coming back.
	t.Run("a --health-cmd string ends unhealthy", func(t *testing.T) {
		h := mergeHealth(dockerHealthOptions(t, `--health-cmd "`+binaryPath+` health" --health-interval 1s --health-retries 1`), img)
		h.StartPeriod = 0 // not inherited here only to reach the verdict sooner
		mapping, port := publish(t, "5001:5001")
		args := append([]string{"-p", mapping}, healthFlags(t, h)...)
		started := runContainer(t, cli, port, append(args, image)...)
		started.assertServes()
		if status := started.waitHealth(h.Interval); status != "unhealthy" {
			t.Fatalf("CMD-SHELL check in a shell-less image ended %q, want unhealthy", status)
		}
	})
}

// TestDocsContainerLinesRun runs every `docker run` line of the container
// section of docs/mock/running.md: servers until they answer (and, where
// the line sets an admin token, the console with and without it), other
// subcommands to a zero exit.
func TestDocsContainerLinesRun(t *testing.T) {
	cli, image := containerRuntime(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lines := docsDockerRunLines(t, filepath.Join(root, "docs", "mock", "running.md"))
	if len(lines) < 3 {
		t.Fatalf("found %d docker run lines in the container section, want at least 3", len(lines))
	}
	for _, line := range lines {
		t.Run(line, func(t *testing.T) {
			words := shellWords(t, strings.ReplaceAll(line, "$PWD", root))
			if len(words) < 3 || words[0] != "docker" || words[1] != "run" {
				t.Fatalf("not a docker run line: %q", words)
			}
			var args, cmd []string
			var token string
			port := 0
			for i := 2; i < len(words); i++ {
				w := words[i]
				switch {
				case w == "ghcr.io/difyops/dify-mock:<version>":
					cmd = words[i+1:]
					i = len(words)
				case w == "-p":
					i++
					var mapping string
					mapping, port = publish(t, words[i])
					args = append(args, "-p", mapping)
				case w == "--rm":
					args = append(args, w)
				case w == "-e" || w == "-v":
					i++
					if k, v, _ := strings.Cut(words[i], "="); w == "-e" && k == "DIFY_MOCK_ADMIN_TOKEN" {
						token = v
					}
					args = append(args, w, words[i])
				default:
					t.Fatalf("flag %q is not modelled by this test", w)
				}
			}
			if len(cmd) > 0 {
				out, err := exec.Command(cli, append(append([]string{"run"}, args...), append([]string{image}, cmd...)...)...).CombinedOutput()
				if err != nil || !bytes.HasPrefix(out, []byte("ok: ")) {
					t.Fatalf("%q: %v\n%s", cmd, err, out)
				}
				return
			}
			if port == 0 {
				t.Fatal("a server line that publishes no port")
			}
			started := runContainer(t, cli, port, append(args, image)...)
			started.assertServes()
			if token == "" {
				return
			}
			if code, body := started.get("/__mock/api/state", nil); code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Fatalf("console without the token: %d %s", code, body)
			}
			if code, body := started.get("/__mock/api/state", http.Header{"X-Dify-Mock-Admin-Token": {token}}); code != http.StatusOK {
				t.Fatalf("console with the token: %d %s", code, body)
			}
		})
	}
}

// docsDockerRunLines returns the `docker run` commands of the first sh
// block under "### Container image", continuation lines joined.
func docsDockerRunLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)### Container image\n.*?```sh\n(.*?)```").FindSubmatch(data)
	if section == nil {
		t.Fatal("no sh block in the Container image section")
	}
	joined := strings.ReplaceAll(string(section[1]), "\\\n", " ")
	var lines []string
	for _, l := range strings.Split(joined, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "docker run ") {
			lines = append(lines, l)
		}
	}
	return lines
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "dify-mock", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestDocsOCIArchiveLines runs the docs' skopeo and umoci lines on the
// archive `make image` wrote: one platform is picked out of the index and
// unpacked, and its binary is that platform's.
func TestDocsOCIArchiveLines(t *testing.T) {
	_, image := containerRuntime(t)
	tarPath := os.Getenv("DIFY_MOCK_IMAGE_TAR")
	_, version, _ := strings.Cut(image, ":")
	for _, tool := range []string{"skopeo", "umoci"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/ensure-podman.sh installs it)", tool)
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "mock", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(skopeo copy .*?)```").FindSubmatch(data)
	if block == nil {
		t.Fatal("no sh block starting with skopeo copy in docs/mock/running.md")
	}
	// The archive of `make image` holds linux/amd64 and linux/arm64; a
	// release-check snapshot only this machine's: the line's platform is
	// swapped for one the archive holds when it lacks the documented one.
	_, idx := loadedImageIndex(t)
	var archs []string
	for _, d := range idx.Manifests {
		archs = append(archs, d.Platform.Architecture)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	dir := t.TempDir()
	var unpacked, arch string
	for _, line := range strings.Split(strings.TrimSpace(string(block[1])), "\n") {
		line = strings.ReplaceAll(line, "dist/dify-mock-image_<version>.tar", tarPath)
		words := shellWords(t, strings.ReplaceAll(line, "<version>", version))
		if i := slices.Index(words, "--override-arch"); i >= 0 && i+1 < len(words) {
			if !slices.Contains(archs, words[i+1]) {
				t.Logf("the archive holds %q, not the documented %s: picking %s", archs, words[i+1], archs[0])
				words[i+1] = archs[0]
			}
			arch = words[i+1]
		}
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", words, err, out)
		}
		unpacked = words[len(words)-1]
	}
	f, err := elf.Open(filepath.Join(dir, unpacked, "rootfs", "usr", "local", "bin", "dify-mock"))
	if err != nil {
		t.Fatalf("the unpacked bundle has no binary: %v", err)
	}
	defer f.Close()
	if want, ok := machines[arch]; !ok || f.Machine != want {
		t.Fatalf("unpacked binary is for %v, want the %q the line picked", f.Machine, arch)
	}

	// The reason for the detour: umoci refuses an index of several images.
	if len(archs) < 2 {
		return
	}
	layout := filepath.Join(dir, "layout")
	if err := os.Mkdir(layout, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", tarPath, "-C", layout).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, out)
	}
	out, err := exec.Command("umoci", "unpack", "--rootless", "--image", layout+":"+version, filepath.Join(dir, "direct")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ambiguous") {
		t.Fatalf("umoci unpack on the multi-platform index: %v %s (the docs say it refuses it)", err, out)
	}
}
