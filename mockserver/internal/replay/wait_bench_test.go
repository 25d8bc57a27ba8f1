package replay

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/cputime"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// BenchmarkConcurrentWaits plays 2,000 replays at once, each 40 frames
// 2 ms apart into a discarding sink, and reports the CPU time per frame:
// the player's waits (timer, select, scheduler) with each replay's signal
// in place, the cost that every frame of a live stream pays.
func BenchmarkConcurrentWaits(b *testing.B) {
	ct := &cassette.RecordedTurn{Status: 200, Request: dify.ChatRequest{Query: "hi"}}
	for i := range 40 {
		raw := pAnswer1
		if i == 39 {
			raw = pMessageEnd
		}
		ct.Frames = append(ct.Frames, cassette.RecordedFrame{Offset: time.Duration(i) * 2 * time.Millisecond, Raw: raw})
	}
	sc, err := Compile(&cassette.Cassette{Name: "waits", Turns: []*cassette.RecordedTurn{ct}})
	if err != nil {
		b.Fatal(err)
	}
	bd := bind(sc.Turns[0])
	const streams = 2000
	cpu0 := cputime.Self()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := NewInterrupter()
				bd.Play(context.Background(), &sink{}, Options{Speed: 1}, in, func(*Report) {})
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	cpu := cputime.Self() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*streams*40), "cpu-ns/frame")
}
