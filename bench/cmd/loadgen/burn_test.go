package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/internal/cputime"
)

// burn uses about the cores it is asked for: half a core is neither idle
// nor a whole one (generous bounds: the machine is shared), and it stops
// when its context ends.
func TestBurnUsesTheCoresAskedFor(t *testing.T) {
	const want, run = 0.5, 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), run)
	defer cancel()
	start, cpu0 := time.Now(), cputime.Self()
	burn(ctx, want, 10*time.Millisecond)
	wall := time.Since(start)
	got := (cputime.Self() - cpu0).Seconds() / wall.Seconds()
	if got < 0.2 || got > 0.9 {
		t.Errorf("burned %.2f cores, want about %g", got, want)
	}
	if wall > run+2*time.Second {
		t.Errorf("burn ran %v after its context ended at %v", wall, run)
	}
}

func TestBurnRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--cores", "0"}, {"--cores", "-1"}, {"--cores", "1000"}, {"--period", "0"}} {
		if err := runBurn(t.Context(), args, io.Discard); err == nil {
			t.Errorf("loadgen burn %v: no error", args)
		}
	}
}
