//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary plays two more parts, chosen by DIFY_MOCK_TEST_ROLE:
// "mock" is dify-mock itself (main with the remaining arguments); "owner"
// starts such a mock with the arguments after it, prints the mock's pid,
// and waits to be killed, as a test runner or wrapper would.
func TestMain(m *testing.M) {
	switch os.Getenv("DIFY_MOCK_TEST_ROLE") {
	case "mock":
		os.Args = append([]string{"dify-mock"}, os.Args[1:]...)
		main()
	case "owner":
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), "DIFY_MOCK_TEST_ROLE=mock")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("mock pid %d\n", cmd.Process.Pid)
		select {}
	}
	os.Exit(m.Run())
}

// startOwner starts an owner process whose mock runs serve with args, and
// returns the owner, the mock's pid and its port once the banner is out.
func startOwner(t *testing.T, args ...string) (owner *exec.Cmd, mockPid, port int) {
	t.Helper()
	owner = exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--speed", "0"}, args...)...)
	owner.Env = append(os.Environ(), "DIFY_MOCK_TEST_ROLE=owner")
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	pidRe := regexp.MustCompile(`^mock pid (\d+)$`)
	portRe := regexp.MustCompile(`API base URL  http://127\.0\.0\.1:(\d+)/v1`)
	lines := bufio.NewScanner(out)
	deadline := time.AfterFunc(20*time.Second, func() { _ = owner.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() && (mockPid == 0 || port == 0) {
		if m := pidRe.FindStringSubmatch(lines.Text()); m != nil {
			mockPid, _ = strconv.Atoi(m[1])
			t.Cleanup(func() { _ = syscall.Kill(mockPid, syscall.SIGKILL) })
		}
		if m := portRe.FindStringSubmatch(lines.Text()); m != nil {
			port, _ = strconv.Atoi(m[1])
		}
	}
	if mockPid == 0 || port == 0 {
		t.Fatalf("no mock pid or banner from the owner (%v)", lines.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // the mock's shutdown lines
	return owner, mockPid, port
}

// portClosesWithin reports whether 127.0.0.1:port stops accepting
// connections within d.
func portClosesWithin(port int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return true
		}
		c.Close()
	}
	return false
}

func TestExitWithParentEndsTheMockWithItsOwner(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			owner, _, port := startOwner(t, "--exit-with-parent")
			if err := owner.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if !portClosesWithin(port, 2*time.Second) {
				t.Fatalf("the mock still listens 2s after its owner got %v", sig)
			}
			t.Logf("port closed %v after the owner got %v", time.Since(start).Round(time.Millisecond), sig)
		})
	}

	// The control: without the flag the orphan keeps serving, which is what
	// the flag is for (and shows the check above can fail).
	t.Run("without the flag", func(t *testing.T) {
		owner, mockPid, port := startOwner(t)
		if err := owner.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if portClosesWithin(port, time.Second) {
			t.Fatal("the mock stopped with its owner although --exit-with-parent was not given")
		}
		_ = syscall.Kill(mockPid, syscall.SIGKILL)
	})
}

func TestExitWithParentFromTheEnvironment(t *testing.T) {
	t.Setenv("DIFY_MOCK_EXIT_WITH_PARENT", "true")
	owner, _, port := startOwner(t)
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !portClosesWithin(port, 2*time.Second) {
		t.Fatal("DIFY_MOCK_EXIT_WITH_PARENT=true did not end the mock with its owner")
	}
}

// The poll that macOS and the other Unixes rely on (Linux's parent-death
// signal wins the race above): a pid that is no longer the parent is
// reported gone at the next check; the real parent is not, until ctx ends.
func TestWaitParentGonePolls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	if !waitParentGone(ctx, os.Getppid()+1) {
		t.Fatal("a pid that is not the parent was not reported gone")
	}
	if d := time.Since(start); d > 3*parentPollInterval+time.Second {
		t.Errorf("reported after %v, want about one poll interval (%v)", d, parentPollInterval)
	}
	short, stop := context.WithTimeout(ctx, 3*parentPollInterval)
	defer stop()
	if waitParentGone(short, os.Getppid()) {
		t.Fatal("the live parent was reported gone")
	}
}
