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

	if mock.ClientCores <= 0 || mock.Machine == nil {
		t.Errorf("dify-mock's run has no load figures: client cores %.3f, machine %+v", mock.ClientCores, mock.Machine)
	}

	md := renderReport(in, machine{}, nil, nil)
	for _, want := range []string{"## The live lane", "| dify-mock | 20, all at once | 1 | off | 20 of 20 |", "| bare Go relay | 20, all at once | 1 |",
		"| paced relay | 20, 100 starts/s | 1 |", "Starts 10–90 % ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Targets (the live lane)") {
		t.Errorf("a live target was judged without a run of %d streams:\n%s", targetLiveStreams, md)
	}
	liveTargetsJudgeThePacedRowsWorstRound(t, in)
}

// The lateness target judges dify-mock's row started at
// targetLiveStartRate, on its worst round, with the relay's row of that
// pace beside it and the row started all at once as context; memory is
// judged on the worse of the two rows.
func liveTargetsJudgeThePacedRowsWorstRound(t *testing.T, in *reportInput) {
	t.Helper()
	for i := range in.live {
		in.live[i].Streams = targetLiveStreams
	}
	// Only the row started all at once: memory is judged, lateness not.
	if rows := liveTargetRows(in); len(rows) != 1 || !strings.HasPrefix(rows[0][0], "Memory") {
		t.Fatalf("target rows with no paced dify-mock row: %v", rows)
	}
	in.live[3].StartRate = targetLiveStartRate // the relay's row of that pace
	paced := in.live[0]
	paced.StartRate, paced.Round = targetLiveStartRate, 1
	paced.Added.P99 = 3 * time.Millisecond
	in.live = append(in.live, paced)
	rows := liveTargetRows(in)
	if len(rows) != 2 || rows[0][2] != "met" || !strings.Contains(rows[0][1], "3.00 ms (paced relay: ") ||
		!strings.Contains(rows[0][1], "started all at once, not judged: "+ms(in.live[0].Added.P99)+" ms (bare Go relay: ") {
		t.Fatalf("target rows with a paced row of 3 ms: %v", rows)
	}
	// A second round of 7 ms: the row's worst, which misses.
	second := paced
	second.Round, second.Added.P99 = 2, 7*time.Millisecond
	in.live = append(in.live, second)
	if rows := liveTargetRows(in); rows[0][2] != "**missed**" || !strings.HasPrefix(rows[0][1], "7.00 ms") {
		t.Errorf("target rows with rounds of 3 and 7 ms: %v", rows)
	}
	md := renderReport(in, machine{}, nil, nil)
	if want := "| dify-mock | 1000, 250 starts/s | 2 | off |"; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
	}
	// Its p99 cell: the median of two rounds (their mean) / the worst.
	if want := " | 5.00 / 7.00 | "; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
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
