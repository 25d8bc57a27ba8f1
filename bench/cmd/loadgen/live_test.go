package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/record"
)

// The live section end to end, in process: 20 live chats through dify-mock
// in hybrid mode (not saving), through the bare relay and through a relay
// that holds every read 40 ms. Every chat reaches the upstream and every
// frame is matched with the upstream's write of it; the added lateness is
// taken against those writes (the slow relay shows its 40 ms, the others
// do not carry the upstream's schedule), and the report has both rows and
// the targets' row for dify-mock only at 1,000 streams.
func TestLiveThroughHybridModeAndTheRelay(t *testing.T) {
	const streams, hold = 20, 40 * time.Millisecond
	up, err := newFakeUpstream("plain-answer")
	if err != nil {
		t.Fatal(err)
	}
	upTS := httptest.NewServer(up)
	t.Cleanup(upTS.Close)

	dir := t.TempDir()
	rec, err := record.New(t.Context(), record.Config{Upstream: upTS.URL + "/v1", UpstreamKey: "app-bench-upstream", Dir: dir, MaxTurns: -1, SkipRecordedQueries: true})
	if err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mockserver.New(mockserver.Config{Cassettes: set, Upstream: rec, Speed: 1, UpstreamTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mockTS := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		mockTS.Close()
	})
	relayTS := httptest.NewServer(newRelay(upTS.URL + "/v1"))
	t.Cleanup(relayTS.Close)
	slowTS := httptest.NewServer(holdingRelay(t, upTS.URL, hold))
	t.Cleanup(slowTS.Close)

	out := filepath.Join(t.TempDir(), "r.jsonl")
	var log bytes.Buffer
	for _, tc := range []struct{ name, url, pid, rate string }{
		{"dify-mock", mockTS.URL + "/v1", strconv.Itoa(os.Getpid()), "0"},
		{"bare Go relay", relayTS.URL + "/v1", "", "0"},
		{"holding relay", slowTS.URL + "/v1", "", "0"},
		// 20 chats at 100 a second: the middle 80 % start 160 ms apart.
		{"paced relay", relayTS.URL + "/v1", "", "100"},
	} {
		err := runLive(t.Context(), []string{"--url", tc.url, "--upstream", upTS.URL + "/v1", "--target", tc.name, "--pid", tc.pid,
			"--streams", strconv.Itoa(streams), "--cassette", "plain-answer", "--saving", "off", "--start-rate", tc.rate, "--out", out}, &log)
		if err != nil {
			t.Fatalf("live through %s: %v\n%s", tc.name, err, log.String())
		}
	}
	in := readResultsFile(t, out)
	if len(in.live) != 4 {
		t.Fatalf("results: %+v", in)
	}
	turn, _ := builtinTurn("plain-answer")
	for _, r := range in.live {
		if r.Completed != streams || r.Failed != 0 || r.Added.Count != streams*len(turn.Frames) || r.Frames != len(turn.Frames) ||
			r.UpstreamLate.Count != r.Added.Count || r.TTFE.Count != streams {
			t.Fatalf("%s: %+v\n%s", r.Target, r, log.String())
		}
		// A frame cannot arrive before the upstream began writing it.
		if r.Added.P50 < 0 {
			t.Errorf("%s: added lateness p50 %v is negative", r.Target, r.Added.P50)
		}
		// TTFE includes the first frame's recorded offset; the added
		// lateness does not.
		if r.TTFE.P50 < turn.Frames[0].Offset {
			t.Errorf("%s: TTFE p50 %v is shorter than the first frame's offset %v", r.Target, r.TTFE.P50, turn.Frames[0].Offset)
		}
	}
	mock, bare, slow, paced := in.live[0], in.live[1], in.live[2], in.live[3]
	// Chat i starts no sooner than i/100 s in, so the 90th percentile of
	// the starts is 170 ms in or later; the 10th comes within 40 ms of it
	// only if the machine held most of the early chats back over 100 ms.
	if paced.StartRate != 100 || paced.StartSpread < 40*time.Millisecond {
		t.Errorf("paced relay: start rate %g, starts 10-90 %% over %v; want 100 and about 160 ms", paced.StartRate, paced.StartSpread)
	}
	if bare.StartRate != 0 {
		t.Errorf("bare relay: start rate %g, want 0 (all at once)", bare.StartRate)
	}
	if mock.Server.PeakRSSKiB == 0 || mock.BaseRSSKiB == 0 || mock.KeptBytes == 0 {
		t.Errorf("dify-mock's memory figures: %+v", mock)
	}
	// The holding relay's frames are each at least its hold late, and
	// within a generous bound of it; the bare relay adds less than the hold.
	if slow.Added.P50 < hold || slow.Added.P50 > hold+2*time.Second {
		t.Errorf("holding relay: added p50 %v, want about %v", slow.Added.P50, hold)
	}
	if bare.Added.P50 >= hold {
		t.Errorf("bare relay: added p50 %v, not below the holding relay's %v", bare.Added.P50, hold)
	}
	// No turn was saved: the mock forwarded without saving.
	if files, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(files) > 1 {
		t.Errorf("saved %v with saving off", files)
	}

	md := renderReport(in, machine{}, nil, nil)
	for _, want := range []string{"## The live lane", "| dify-mock | 20 | off | 20 of 20 |", "| bare Go relay | 20 |", "| paced relay | 20, 100 starts/s |", "Starts 10–90 % ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Targets (the live lane)") {
		t.Errorf("a live target was judged without a run of %d streams:\n%s", targetLiveStreams, md)
	}
	for i := range in.live {
		in.live[i].Streams = targetLiveStreams
	}
	if rows := liveTargetRows(in); len(rows) != 2 || !strings.Contains(rows[0][1], "bare Go relay") {
		t.Errorf("target rows %v", rows)
	}
	// A paced run is not the bench's shape of run: no target judges it.
	in.live[0].StartRate = 100
	if rows := liveTargetRows(in); rows != nil {
		t.Errorf("a paced dify-mock row was judged: %v", rows)
	}
}

// holdingRelay is a relay that holds every read from upstream for hold
// before passing it on: a known lateness for the live client to find.
func holdingRelay(t *testing.T, upstream string, hold time.Duration) http.Handler {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &heldBody{ReadCloser: resp.Body, hold: hold}
		return nil
	}
	return rp
}

type heldBody struct {
	io.ReadCloser
	hold time.Duration
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		time.Sleep(b.hold) // the lateness under test, not a wait
	}
	return n, err
}
