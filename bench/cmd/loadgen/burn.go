package main

// `loadgen burn`: other work on the machine, on purpose. Issue 47 asks how
// the streams' lateness moves when other work shares the machine ("0.5
// cores busy elsewhere should not multiply the p99 by five"); the runs
// that answered it before were whatever else happened to be running.
// `make bench` runs the 10,000-stream row again beside `loadgen burn
// --cores 0.5`, at the servers' priority, and the report compares the two
// rows' worst rounds (bench/README.md, "How the figure moves with other
// work on the machine").

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/difyops/terraform-provider-dify/internal/cputime"
)

func runBurn(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("burn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cores := fs.Float64("cores", 0.5, "the CPU to use, in cores: ceil(cores) threads, each busy for its share of every --period")
	period := fs.Duration("period", 10*time.Millisecond, "how often each thread's busy time comes round: a few of the kernel's time slices, so the work competes the way a busy process does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cores <= 0 || *cores > float64(runtime.NumCPU()) || *period <= 0 {
		return fmt.Errorf("--cores must be above 0 and at most this machine's %d CPUs, and --period positive", runtime.NumCPU())
	}
	fmt.Printf("burning %g cores\n", *cores)
	start, cpu0 := time.Now(), cputime.Self()
	burn(ctx, *cores, *period)
	wall := time.Since(start).Seconds()
	fmt.Fprintf(stderr, "burned %.2f cores over %.1f s\n", (cputime.Self()-cpu0).Seconds()/wall, wall)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil // stopped, as the bench stops it
	}
	return ctx.Err()
}

// burn keeps ceil(cores) OS threads busy, each for its share of cores in
// every period (the last one for what is left over), until ctx ends.
func burn(ctx context.Context, cores float64, period time.Duration) {
	threads := int(math.Ceil(cores))
	var wg sync.WaitGroup
	for i := range threads {
		share := min(1, cores-float64(i))
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			busy := time.Duration(share * float64(period))
			t := time.NewTimer(0)
			defer t.Stop()
			for next := time.Now(); ; {
				for time.Since(next) < busy {
					// Spin: the thread holds its CPU as a busy process does.
				}
				next = next.Add(period)
				if d := time.Until(next); d > 0 {
					t.Reset(d)
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				} else if ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
}
