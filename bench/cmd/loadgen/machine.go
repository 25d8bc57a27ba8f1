package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// machineCPU is the whole machine's CPU time so far, from the first line
// of /proc/stat, in USER_HZ ticks (all CPUs together). On a virtual
// machine, steal is the time a CPU of this machine wanted to run but the
// hypervisor ran something else: nothing inside the machine runs then, so
// every frame due in it is late by it. The bench's machine is such a VM,
// and its steal came to 10–30 % of the CPU time during a 10,000-stream
// run (bench/history.md, "Issue 21, sixth round"): a run's figures are
// only comparable with the steal beside them.
type machineCPU struct {
	busy  int64 // user, nice, system, irq, softirq (guest time is inside user)
	idle  int64 // idle and iowait
	steal int64
}

// readMachineCPU reads /proc/stat (false where there is none: not Linux).
func readMachineCPU() (machineCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, false
	}
	return parseMachineCPU(string(b))
}

// parseMachineCPU reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (later fields, guest time, are
// already counted in user and nice). Kernels before 2.6.11 had no steal
// field; it is then 0.
func parseMachineCPU(stat string) (machineCPU, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return machineCPU{}, false
	}
	var v [8]int64
	for i := range v {
		if i+1 >= len(f) {
			break
		}
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return machineCPU{}, false
		}
		v[i] = n
	}
	return machineCPU{busy: v[0] + v[1] + v[2] + v[5] + v[6], idle: v[3] + v[4], steal: v[7]}, true
}

// machineFigures is what the machine did during a run besides the server
// and the load generator.
type machineFigures struct {
	// StealPercent is the share of all CPUs' time that the hypervisor took.
	StealPercent float64 `json:"steal_percent"`
	// OtherCores is the machine's busy time, in cores, less the server's
	// and the load generator's: other processes and the kernel's work for
	// no process (0 when it comes out negative: the counters are sampled
	// a moment apart).
	OtherCores float64 `json:"other_cores"`
}

// describe is the figures for a summary line ("" when there are none).
func (m *machineFigures) describe() string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf(" stolen=%.1f%% other=%.2f", m.StealPercent, m.OtherCores)
}

// stolen is a run's steal for a target's measured column: ", 4.2 % of the
// CPU stolen" ("" without figures), since a late frame in stolen time is
// the hypervisor's, not the mock's.
func (m *machineFigures) stolen() string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf(", %.1f %% of the CPU stolen", m.StealPercent)
}

// machineOver is the machine's figures between two readings window
// seconds apart, given the cores the server and the load generator used.
func machineOver(a, b machineCPU, window, serverCores, clientCores float64) *machineFigures {
	busy, idle, steal := b.busy-a.busy, b.idle-a.idle, b.steal-a.steal
	total := busy + idle + steal
	if total <= 0 || window <= 0 {
		return nil
	}
	m := &machineFigures{StealPercent: 100 * float64(steal) / float64(total)}
	busyCores := float64(busy) / clockTicks / window
	m.OtherCores = max(0, busyCores-serverCores-clientCores)
	return m
}

// stealTrack samples the machine's steal every step while a run goes, so
// the timeline can say how much CPU time the hypervisor took in each step.
type stealTrack struct {
	start time.Time
	step  time.Duration

	mu      sync.Mutex
	last    int64 // steal ticks at the last sample; -1 before the first
	byStep  map[int]time.Duration
	lastIdx int
}

func newStealTrack(start time.Time, step time.Duration) *stealTrack {
	return &stealTrack{start: start, step: step, last: -1, byStep: map[int]time.Duration{}}
}

// run samples until ctx ends, or until /proc/stat cannot be read (at
// once where there is none).
func (s *stealTrack) run(ctx context.Context) {
	t := time.NewTicker(s.step)
	defer t.Stop()
	for {
		m, ok := readMachineCPU()
		if !ok {
			return
		}
		s.add(time.Now(), m.steal)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// add records a reading of the cumulative steal counter taken at t. The
// steal since the previous reading is put in the step of the previous
// reading: with a reading every step, that is the step it was taken in
// (give or take the sampler's own lateness).
func (s *stealTrack) add(t time.Time, ticks int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stepOf(t, s.start, s.step)
	if s.last >= 0 && ticks > s.last {
		s.byStep[s.lastIdx] += time.Duration(ticks-s.last) * time.Second / clockTicks
	}
	s.last, s.lastIdx = ticks, k
}

// fill sets each row's Stolen.
func (s *stealTrack) fill(rows []timelineRow) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range rows {
		rows[i].Stolen = s.byStep[int(rows[i].At/s.step)]
	}
}
